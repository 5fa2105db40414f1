/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/bench/report"
)

// The wait scenarios' objects: in namespace waitNamespace(i), one target
// (a ConfigMap, or a ServiceAccount for the unused step) and one user (a
// ConfigMap, or a pod running as the ServiceAccount), both named after the
// scenario.
const (
	waitTargetLabel = "bench-wait-target"
	waitUserLabel   = "bench-wait-user"
)

func waitNamespace(i int) string { return fmt.Sprintf("wait-%04d", i) }

var serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

// waitScenario is one of report.WaitScenarios as the driver runs it.
type waitScenario struct {
	name        string
	unused      bool
	eventDriven bool
}

func (s waitScenario) key() string { return "bench.example.com/" + s.name }

func (s waitScenario) targetResource() schema.GroupVersionResource {
	if s.unused {
		return serviceAccounts
	}
	return configMaps
}

// waits measures every wait scenario asked for, at light load and with
// opts.waitTargets at once, and the unused step's memory.
func (b *bench) waits(ctx context.Context) error {
	if len(b.opts.waitScenarios) == 0 && b.opts.unusedPods == 0 {
		return nil
	}
	spaces := max(b.opts.waitLight, b.opts.waitTargets)
	b.logf("wait scenarios: %d namespaces", spaces)
	if err := parallel(ctx, b.driverWorkers, spaces, func(ctx context.Context, i int) error {
		_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: waitNamespace(i)}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("creating the wait scenarios' namespaces: %w", err)
	}
	var failed []string
	for _, name := range b.opts.waitScenarios {
		sc := waitScenario{name: name, unused: name == report.WaitUnused, eventDriven: name != report.WaitPolling}
		if sc.unused {
			if why := b.unusedMissing(ctx); why != "" {
				b.logf("%s: skipped: %s", name, why)
				for _, load := range []string{report.LoadLight, report.LoadAtOnce} {
					b.res.Waits = append(b.res.Waits, report.WaitLatency{Scenario: name, Load: load, Skipped: why})
				}
				continue
			}
		}
		if err := b.waitScenario(ctx, sc); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.logf("  FAILED: %v", err)
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
		}
	}
	if b.opts.unusedPods > 0 {
		if err := b.unusedRSS(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.logf("  FAILED: %v", err)
			failed = append(failed, fmt.Sprintf("memory of the unused step: %v", err))
		}
	}
	b.res.FillWaitRatios()
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// unusedMissing says why the unused step cannot be measured: the installed
// CRD has no unused field (the step has not landed), or "".
func (b *bench) unusedMissing(ctx context.Context) string {
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-unused-probe"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ServiceAccount", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": "unused-probe"}}}},
			Steps:   []teardownv1alpha1.Step{{Name: "unused", Unused: &teardownv1alpha1.UnusedAction{}}},
		},
	}
	err := b.crc.Create(ctx, pol, client.DryRunAll, client.FieldValidation("Strict"))
	switch {
	case err == nil:
		return ""
	case strings.Contains(err.Error(), "unknown field"):
		return "the ClusterTeardownPolicy CRD has no unused field (the unused step has not landed)"
	default:
		return fmt.Sprintf("a policy with an unused step is refused: %v", err)
	}
}

// waitPolicy creates the scenario's ClusterTeardownPolicy.
func (b *bench) waitPolicy(ctx context.Context, sc waitScenario) (*teardownv1alpha1.ClusterTeardownPolicy, error) {
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-" + sc.name},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: sc.key(),
			Attach:    teardownv1alpha1.AttachAutomatic,
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{waitTargetLabel: sc.name}}}},
			Steps: []teardownv1alpha1.Step{{Name: "users-gone", Wait: &teardownv1alpha1.WaitAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap",
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{waitUserLabel: sc.name}}}},
			}}},
		},
	}
	if sc.unused {
		pol.Spec.Targets[0].Kind = "ServiceAccount"
		pol.Spec.Steps = []teardownv1alpha1.Step{{Name: "unused", Unused: &teardownv1alpha1.UnusedAction{}}}
	}
	if err := b.crc.Create(ctx, pol); err != nil {
		return nil, fmt.Errorf("creating policy %s: %w", pol.Name, err)
	}
	return pol, waitFor(ctx, 90*time.Second, "policy "+pol.Name+" to be Ready", func() (bool, string) {
		got := &teardownv1alpha1.ClusterTeardownPolicy{}
		if err := b.crc.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, teardownv1alpha1.ReadyCondition)
		if cond == nil {
			return false, "no Ready condition"
		}
		return cond.Status == metav1.ConditionTrue, cond.Reason + ": " + cond.Message
	})
}

// deleteWaitPolicy deletes the policy while its controller still runs, and
// waits until it is gone.
func (b *bench) deleteWaitPolicy(ctx context.Context, pol *teardownv1alpha1.ClusterTeardownPolicy) {
	if err := b.crc.Delete(ctx, pol); err != nil {
		b.logf("  deleting policy %s: %v", pol.Name, err)
		return
	}
	if err := waitFor(ctx, time.Minute, "policy "+pol.Name+" to be gone", func() (bool, string) {
		err := b.crc.Get(ctx, client.ObjectKeyFromObject(pol), &teardownv1alpha1.ClusterTeardownPolicy{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	}); err != nil {
		b.logf("  %v", err)
	}
}

// serveWaitScenario applies sc's policy, tracks its targets, and tears down
// target 0 through it, unmeasured: the first step on a kind starts the
// kind's watch (the unused step, its index of pods), which a running
// controller has done long before, and a finished target shows the policy
// serves. stop stops tracking and deletes the policy.
func (b *bench) serveWaitScenario(ctx context.Context, sc waitScenario) (tr *waitTracker, stop func(), err error) {
	pol, err := b.waitPolicy(ctx, sc)
	if err != nil {
		return nil, nil, err
	}
	if tr, err = b.trackWaits(ctx, sc); err != nil {
		b.deleteWaitPolicy(ctx, pol)
		return nil, nil, err
	}
	stop = func() {
		tr.stop()
		b.deleteWaitPolicy(ctx, pol)
	}
	if _, _, _, err := b.waitOne(ctx, sc, tr, 0, false); err != nil {
		stop()
		return nil, nil, fmt.Errorf("first, unmeasured target: %w", err)
	}
	return tr, stop, nil
}

// waitScenario runs one scenario's controller and policy, then measures
// it at light load and with every target at once.
func (b *bench) waitScenario(ctx context.Context, sc waitScenario) error {
	b.logf("%s: light load (%d targets one at a time), then %d at once", sc.name, b.opts.waitLight, b.opts.waitTargets)
	args := append(b.teardownFlags(), fmt.Sprintf("--event-driven-waits=%t", sc.eventDriven))
	c, err := b.startChild("wait-"+sc.name, teardownQueues, filepath.Join(b.bin, "teardown"), args...)
	if err != nil {
		return err
	}
	defer c.stop()
	tr, stop, err := b.serveWaitScenario(ctx, sc)
	if err != nil {
		return err
	}
	defer stop()

	// Light load: one target at a time, its last user going at a random
	// moment within the poll interval after the cleanup is pending, as a
	// user would, unaware of the controller's schedule.
	var light []time.Duration
	var lightFirst, lightLast time.Time
	early := 0
	for i := range b.opts.waitLight {
		lat, sent, gone, err := b.waitOne(ctx, sc, tr, i, true)
		if errors.Is(err, errReleasedEarly) {
			b.logf("  light load, target %d: %v", i, err)
			early++
			continue
		}
		if err != nil {
			return fmt.Errorf("light load, target %d: %w", i, err)
		}
		light = append(light, lat)
		if lightFirst.IsZero() {
			lightFirst = sent
		}
		lightLast = gone
	}
	lightRes := waitLatency(sc.name, report.LoadLight, light, lightLast.Sub(lightFirst))
	lightRes.ReleasedEarly = early
	b.res.Waits = append(b.res.Waits, lightRes)
	b.logf("  light: p50 %.3fs, p99 %.3fs", report.Percentile(light, 50), report.Percentile(light, 99))

	// At once: every target pending, then every user deleted at once.
	n := b.opts.waitTargets
	if err := parallel(ctx, b.driverWorkers, n, func(ctx context.Context, i int) error { return b.createPair(ctx, sc, i) }); err != nil {
		return err
	}
	if err := tr.waitAll(ctx, n, phaseTimeout(n), "guarded", func(s *waitState) bool { return !s.guarded.IsZero() }); err != nil {
		return err
	}
	if err := parallel(ctx, b.driverWorkers, n, func(ctx context.Context, i int) error { return b.deleteTarget(ctx, sc, i) }); err != nil {
		return err
	}
	if err := tr.waitAll(ctx, n, phaseTimeout(n), "pending", func(s *waitState) bool { return !s.pending.IsZero() || !s.gone.IsZero() }); err != nil {
		return err
	}
	early = 0
	for i := range n {
		if tr.state(waitNamespace(i)).pending.IsZero() {
			early++
		}
	}
	if early > 0 {
		b.logf("  %d of %d targets released at their first check, while their user existed", early, n)
	}
	waiting, waitingBy, err := b.waitingRequests(ctx)
	if err != nil {
		return err
	}
	sent := make([]time.Time, n)
	if err := parallel(ctx, b.driverWorkers, n, func(ctx context.Context, i int) error {
		sent[i] = time.Now()
		return b.deleteUser(ctx, sc, i)
	}); err != nil {
		return err
	}
	if err := tr.waitAll(ctx, n, phaseTimeout(n), "gone", func(s *waitState) bool { return !s.gone.IsZero() }); err != nil {
		return err
	}
	var lat []time.Duration
	var last time.Time
	for i := range n {
		st := tr.state(waitNamespace(i))
		if st.pending.IsZero() {
			continue // released early: not a latency of the wait
		}
		lat = append(lat, st.gone.Sub(sent[i]))
		if st.gone.After(last) {
			last = st.gone
		}
	}
	atOnce := waitLatency(sc.name, report.LoadAtOnce, lat, last.Sub(earliest(sent)))
	atOnce.WaitingRequests, atOnce.WaitingBy, atOnce.ReleasedEarly = waiting, waitingBy, early
	b.res.Waits = append(b.res.Waits, atOnce)
	b.logf("  %d at once: p50 %.3fs, p99 %.3fs, all gone %.2fs after the first user's deletion; %.0f API requests/s while they waited", n,
		report.Percentile(lat, 50), report.Percentile(lat, 99), last.Sub(earliest(sent)).Seconds(), waiting)
	tr.reset()
	return nil
}

// waitingHold is how long the API server's requests are counted while
// every target waits: longer than the 30 s safety net, so that its round
// (a list, and a progress record and an Event every run that rewrites it)
// counts too.
const waitingHold = 35 * time.Second

// waitingRequests counts the API server's requests (every verb but WATCH)
// per second over waitingHold, while the driver does nothing, in all and
// per "VERB resource".
func (b *bench) waitingRequests(ctx context.Context) (float64, map[string]float64, error) {
	before, err := b.scrape(ctx)
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-time.After(waitingHold):
	}
	after, err := b.scrape(ctx)
	if err != nil {
		return 0, nil, err
	}
	secs := time.Since(start).Seconds()
	total := 0.0
	by := map[string]float64{}
	for k, v := range after.Sub(before) {
		if k.Verb == "WATCH" || strings.HasPrefix(k.Verb, "etcd:") || v == 0 {
			continue
		}
		total += v
		name := k.Resource
		if k.Subresource != "" {
			name += "/" + k.Subresource
		}
		by[k.Verb+" "+name] += v
	}
	for name, v := range by {
		by[name] = round(v/secs, 1)
	}
	return round(total/secs, 1), by, nil
}

func waitLatency(scenario, load string, lat []time.Duration, total time.Duration) report.WaitLatency {
	return report.WaitLatency{
		Scenario: scenario, Load: load, Targets: len(lat),
		P50: round(report.Percentile(lat, 50), 4), P99: round(report.Percentile(lat, 99), 4), Max: round(report.Percentile(lat, 100), 4),
		Seconds: round(total.Seconds(), 3), LoadAverage: loadAverage(),
	}
}

// waitOne tears down target i alone: create its user and itself, delete
// it, wait until its cleanup is pending, wait a random moment within the
// poll interval, delete the user, and wait until the target is gone.
func (b *bench) waitOne(ctx context.Context, sc waitScenario, tr *waitTracker, i int, randomPhase bool) (lat time.Duration, sent, gone time.Time, err error) {
	ns := waitNamespace(i)
	if err := b.createPair(ctx, sc, i); err != nil {
		return 0, sent, gone, err
	}
	if err := tr.wait(ctx, ns, "guarded", func(s *waitState) bool { return !s.guarded.IsZero() }); err != nil {
		return 0, sent, gone, err
	}
	if err := b.deleteTarget(ctx, sc, i); err != nil {
		return 0, sent, gone, err
	}
	if err := tr.wait(ctx, ns, "pending", func(s *waitState) bool { return !s.pending.IsZero() || !s.gone.IsZero() }); err != nil {
		return 0, sent, gone, err
	}
	if tr.state(ns).pending.IsZero() {
		// Gone at the first check, while its user existed.
		tr.forget(ns)
		return 0, sent, gone, errors.Join(errReleasedEarly, b.deleteUser(ctx, sc, i))
	}
	if randomPhase {
		time.Sleep(rand.N(2 * time.Second))
	}
	sent = time.Now()
	if err := b.deleteUser(ctx, sc, i); err != nil {
		return 0, sent, gone, err
	}
	if err := tr.wait(ctx, ns, "gone", func(s *waitState) bool { return !s.gone.IsZero() }); err != nil {
		return 0, sent, gone, err
	}
	gone = tr.state(ns).gone
	tr.forget(ns)
	return gone.Sub(sent), sent, gone, nil
}

// errReleasedEarly: the target was gone without its cleanup ever being
// pending, although its user existed when it was deleted.
var errReleasedEarly = errors.New("released at the first check, while its user existed")

// waitOptions are the wait scenarios' flags.
type waitOptions struct {
	waitScenarios []string
	waitLight     int
	waitTargets   int
	unusedPods    int
}

// bindWaitFlags registers the wait scenarios' flags; the returned function
// applies -quick and checks them after flag.Parse.
func bindWaitFlags(o *waitOptions) func(quick bool) error {
	scenarios := flag.String("waits", strings.Join(report.WaitScenarios, ","), "Comma-separated wait scenarios (latency from the last user's deletion to the target's removal); empty for none.")
	flag.IntVar(&o.waitLight, "wait-light", 40, "Targets of each wait scenario torn down one at a time (light load).")
	flag.IntVar(&o.waitTargets, "wait-targets", 1000, "Targets of each wait scenario torn down at once.")
	flag.IntVar(&o.unusedPods, "unused-pods", 10000, "Pods in the cluster for the unused step's memory; 0 skips it. -quick makes it 2,000 and -wait-light 15, unless given.")
	return func(quick bool) error {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if quick && !set["wait-light"] {
			o.waitLight = 15
		}
		if quick && !set["unused-pods"] {
			o.unusedPods = 2000
		}
		for _, s := range strings.Split(*scenarios, ",") {
			if s == "" {
				continue
			}
			if !slices.Contains(report.WaitScenarios, s) {
				return fmt.Errorf("unknown wait scenario %q (known: %s)", s, strings.Join(report.WaitScenarios, ", "))
			}
			o.waitScenarios = append(o.waitScenarios, s)
		}
		if len(o.waitScenarios) > 0 && (o.waitLight <= 0 || o.waitTargets <= 0) {
			return errors.New("-wait-light and -wait-targets must be positive")
		}
		return nil
	}
}
