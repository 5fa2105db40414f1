/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/bench/apimetrics"
	"github.com/teardown-dev/teardown/bench/report"
	"github.com/teardown-dev/teardown/internal/steps"
)

// The finalizer keys of the scenarios.
const (
	rawKey      = "bench.teardown.dev/raw"
	baselineKey = "bench.teardown.dev/baseline"
)

// policyKey is the finalizer key of the policy in namespace ns: one key per
// policy, as the controller refuses two policies sharing a key for a kind,
// outside teardown.dev, where a policy may use only its default key.
func policyKey(ns string) string { return "bench.example.com/" + ns }

// phaseTimeout bounds one phase over n objects: generous, at 20 objects/s.
func phaseTimeout(n int) time.Duration { return 2*time.Minute + time.Duration(n)*50*time.Millisecond }

// What the raw client's removal is (-raw-write).
const (
	rawJSONPatch = "json-patch"
	rawStrategic = "strategic-merge-patch"
	rawMerge     = "merge-patch"
)

// rawLimit measures the API server's limit for "delete, then remove the
// finalizer with a guarded patch" at each concurrency, and keeps the best.
func (b *bench) rawLimit(ctx context.Context, n int, concurrency []int) (report.Run, error) {
	var best report.Run
	tried := map[int]float64{}
	for _, c := range concurrency {
		run, err := b.rawOnce(ctx, n, c)
		if err != nil {
			return report.Run{}, err
		}
		b.logf("  raw limit N=%d concurrency %d: %.0f objects/s, p99 %.3fs", n, c, run.Throughput, run.P99)
		tried[c] = round(run.Throughput, 1)
		if run.Throughput > best.Throughput {
			best = run
		}
	}
	best.Tried = tried
	return best, nil
}

func (b *bench) rawOnce(ctx context.Context, n, concurrency int) (report.Run, error) {
	run := report.Run{Scenario: report.Raw, N: n, Workers: concurrency}
	ns := b.nsName("raw-%d-c%d", n, concurrency)
	if err := b.createNamespace(ctx, ns); err != nil {
		return run, err
	}
	tr, err := b.track(ctx, ns, rawKey)
	if err != nil {
		return run, err
	}
	defer tr.stop()
	names := objectNames("cm", n)
	uids, err := b.createConfigMaps(ctx, ns, names, []string{rawKey}, b.opts.dataBytes)
	if err != nil {
		return run, err
	}
	if err := tr.waitAttached(ctx, names, phaseTimeout(n)); err != nil {
		return run, err
	}
	m0, err := b.scrape(ctx)
	if err != nil {
		return run, err
	}
	cpu0 := controlPlaneCPU()
	profiled := b.profile(ctx, nil, fmt.Sprintf("%s-c%d", report.Raw, concurrency), n)
	starts, err := b.deleteConfigMaps(ctx, ns, names, concurrency, func(ctx context.Context, i int) error {
		pt, patch := types.JSONPatchType, fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`, uids[i], rawKey)
		if b.opts.rawWrite == rawStrategic {
			// The library pins the resourceVersion it read too; the raw
			// client reads nothing, so only the uid.
			pt, patch = types.StrategicMergePatchType, fmt.Sprintf(`{"metadata":{"uid":%q,"$deleteFromPrimitiveList/finalizers":[%q]}}`, uids[i], rawKey)
		}
		if b.opts.rawWrite == rawMerge {
			// The whole list, as a merge patch can only replace it: safe
			// only pinned to a resourceVersion, which the raw client does
			// not read (rawKey is its only key).
			pt, patch = types.MergePatchType, fmt.Sprintf(`{"metadata":{"uid":%q,"finalizers":null}}`, uids[i])
		}
		_, err := b.meta.Resource(configMaps).Namespace(ns).Patch(ctx, names[i], pt, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("removing the finalizer of %s/%s: %w", ns, names[i], err)
		}
		return nil
	})
	if err != nil {
		return run, err
	}
	run.DeletesSentSeconds = round(time.Since(earliest(starts)).Seconds(), 3)
	if err := tr.waitGone(ctx, names, phaseTimeout(n)); err != nil {
		return run, err
	}
	run.CPUSeconds = subCPU(controlPlaneCPU(), cpu0)
	profiled()
	m1, err := b.scrape(ctx)
	if err != nil {
		return run, err
	}
	if err := finish(&run, names, starts, tr); err != nil {
		return run, err
	}
	countWrites(&run, apimetrics.Snapshot{}, m1.Sub(m0), n)
	return run, nil
}

// teardownRun measures the teardown-controller with a policy of the
// scenario's kind.
func (b *bench) teardownRun(ctx context.Context, scenario string, n int) (report.Run, error) {
	run := report.Run{Scenario: scenario, N: n, Workers: b.opts.teardownWorkers}
	ns := b.nsName("%s-%d", scenario, n)
	declared := scenario == report.TeardownDeclared
	if err := b.createNamespace(ctx, ns); err != nil {
		return run, err
	}
	if err := b.createPolicy(ctx, ns, declared, scenario == report.TeardownWebhook); err != nil {
		return run, err
	}
	c, err := b.startChild(ns, teardownQueues, filepath.Join(b.bin, "teardown"), b.teardownFlags()...)
	if err != nil {
		return run, err
	}
	defer c.stop()
	defer b.deletePolicy(ctx, ns)
	if err := b.waitPolicyReady(ctx, ns); err != nil {
		return run, err
	}
	return run, b.controllerRun(ctx, &run, c, ns, policyKey(ns), n, declared)
}

// baselineRun measures the kubebuilder-pattern controller, as generated or
// tuned.
func (b *bench) baselineRun(ctx context.Context, scenario string, n int) (report.Run, error) {
	run := report.Run{Scenario: scenario, N: n, Workers: 1}
	ns := b.nsName("%s-%d", scenario, n)
	if err := b.createNamespace(ctx, ns); err != nil {
		return run, err
	}
	args := []string{"--finalizer=" + baselineKey, "--selector=" + benchLabel + "=" + benchValue}
	if scenario == report.BaselineTuned {
		run.Workers = b.opts.tunedWorkers
		args = append(args, fmt.Sprintf("--workers=%d", b.opts.tunedWorkers),
			fmt.Sprintf("--kube-api-qps=%d", b.opts.tunedQPS), fmt.Sprintf("--kube-api-burst=%d", 2*b.opts.tunedQPS))
	}
	c, err := b.startChild(ns, "configmap", filepath.Join(b.bin, "baseline"), args...)
	if err != nil {
		return run, err
	}
	defer c.stop()
	return run, b.controllerRun(ctx, &run, c, ns, baselineKey, n, false)
}

func (b *bench) teardownFlags() []string {
	return append([]string{
		fmt.Sprintf("--target-workers=%d", b.opts.teardownWorkers),
		// The teardown-webhook scenario's receiver is plain http on
		// 127.0.0.1, which webhook steps call only where allowed.
		"--" + steps.AllowedCIDRsFlag + "=127.0.0.0/8", "--" + steps.AllowHTTPFlag,
	}, b.opts.teardownArgs...)
}

// controllerRun is the measurement common to every controller: create n
// guarded objects and wait until the controller is done attaching, then
// delete them all at once and wait until they are gone.
func (b *bench) controllerRun(ctx context.Context, run *report.Run, c *child, ns, key string, n int, declared bool) error {
	tr, err := b.track(ctx, ns, key)
	if err != nil {
		return err
	}
	defer tr.stop()
	if err := b.probe(ctx, c, ns, key, declared, tr); err != nil {
		return err
	}
	names := objectNames("cm", n)
	var finalizers []string
	if declared {
		finalizers = []string{key}
	}
	adds0, _, err := c.queueState(ctx)
	if err != nil {
		return err
	}
	m0, err := b.scrape(ctx)
	if err != nil {
		return err
	}
	if _, err := b.createConfigMaps(ctx, ns, names, finalizers, b.opts.dataBytes); err != nil {
		return err
	}
	if err := tr.waitAttached(ctx, names, phaseTimeout(n)); err != nil {
		return err
	}
	if err := c.waitIdle(ctx, adds0+float64(n), phaseTimeout(n)); err != nil {
		return err
	}
	m1, err := b.scrape(ctx)
	if err != nil {
		return err
	}
	adds1, _, err := c.queueState(ctx)
	if err != nil {
		return err
	}

	cpu0 := controlPlaneCPU()
	cpu0["controller"] = cpuSeconds(c.pid())
	calls0, conns0 := b.webhook.calls.Load(), b.webhook.conns.Load()
	profiled := b.profile(ctx, c, run.Scenario, n)
	starts, err := b.deleteConfigMaps(ctx, ns, names, b.driverWorkers, nil)
	if err != nil {
		return err
	}
	run.DeletesSentSeconds = round(time.Since(earliest(starts)).Seconds(), 3)
	if err := tr.waitGone(ctx, names, phaseTimeout(n)); err != nil {
		return err
	}
	cpu1 := controlPlaneCPU()
	cpu1["controller"] = cpuSeconds(c.pid())
	run.WebhookCalls, run.WebhookConnections = b.webhook.calls.Load()-calls0, b.webhook.conns.Load()-conns0
	run.CPUSeconds = subCPU(cpu1, cpu0)
	if err := c.waitIdle(ctx, adds1+float64(n), phaseTimeout(n)); err != nil {
		return err
	}
	m2, err := b.scrape(ctx)
	if err != nil {
		return err
	}
	profiled()
	if err := finish(run, names, starts, tr); err != nil {
		return err
	}
	countWrites(run, m1.Sub(m0), m2.Sub(m1), n)
	return nil
}

// profile starts CPU profiles of the controller (if c is not nil) and of
// kube-apiserver when -profile is set, over the expected delete phase; the
// returned function waits for them.
func (b *bench) profile(ctx context.Context, c *child, scenario string, n int) func() {
	if !b.opts.profile {
		return func() {}
	}
	secs := max(2, int(1.2*float64(n)/b.expectedRate(n)+0.5))
	dir := filepath.Join(b.out, "profiles")
	errs := make(chan error, 2)
	started := 1
	go func() {
		data, err := b.kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", fmt.Sprint(secs)).Timeout(time.Duration(secs+30) * time.Second).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d-r%d.kube-apiserver.cpu.pprof", scenario, n, b.round)), data, 0o644)
		}
		errs <- err
	}()
	// The heap profile's allocation counts are cumulative: one taken before
	// the phase and one after give the phase's allocations with
	// `go tool pprof -sample_index=alloc_space -base before after`.
	allocs := func(when string) {
		if c == nil {
			return
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%d-r%d.allocs-%s.pprof", scenario, n, b.round, when))
		if data, err := c.get(ctx, "/debug/pprof/allocs"); err != nil {
			b.logf("  allocation profile: %v", err)
		} else if err := os.WriteFile(path, data, 0o644); err != nil {
			b.logf("  allocation profile: %v", err)
		}
	}
	allocs("before")
	if c != nil {
		started++
		go func() {
			errs <- c.cpuProfile(ctx, secs, filepath.Join(dir, fmt.Sprintf("%s-%d-r%d.cpu.pprof", scenario, n, b.round)))
		}()
	}
	return func() {
		for range started {
			if err := <-errs; err != nil {
				b.logf("  CPU profile: %v", err)
			}
		}
		allocs("after")
	}
}

// expectedRate guesses objects/s for sizing a CPU profile: the raw limit of
// this N if measured, else 500.
func (b *bench) expectedRate(n int) float64 {
	if raw, ok := b.res.Find(report.Raw, n); ok && raw.Throughput > 0 {
		return raw.Throughput
	}
	return 500
}

// probe creates and deletes one guarded object, which proves the controller
// is watching and acting before anything is measured.
func (b *bench) probe(ctx context.Context, c *child, ns, key string, declared bool, tr *tracker) error {
	names := []string{"probe"}
	var finalizers []string
	if declared {
		finalizers = []string{key}
	}
	if _, err := b.createConfigMaps(ctx, ns, names, finalizers, 0); err != nil {
		return err
	}
	if err := tr.waitAttached(ctx, names, 90*time.Second); err != nil {
		return fmt.Errorf("probe of %s: %w (see %s)", c.name, err, c.log.Name())
	}
	if _, err := b.deleteConfigMaps(ctx, ns, names, 1, nil); err != nil {
		return err
	}
	if err := tr.waitGone(ctx, names, 90*time.Second); err != nil {
		return fmt.Errorf("probe of %s: %w (see %s)", c.name, err, c.log.Name())
	}
	return c.waitIdle(ctx, 0, 30*time.Second)
}

// createPolicy creates the TeardownPolicy "bench" guarding the namespace's
// ConfigMaps labelled app=bench.
func (b *bench) createPolicy(ctx context.Context, ns string, declared, webhook bool) error {
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: policyKey(ns),
			Attach:    teardownv1alpha1.AttachAutomatic,
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{benchLabel: benchValue}}}},
		},
	}
	if declared {
		pol.Spec.Attach = teardownv1alpha1.AttachDeclared
	}
	if webhook {
		url := b.webhook.url
		pol.Spec.Steps = []teardownv1alpha1.Step{{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: &url}}}
	}
	if err := b.crc.Create(ctx, pol); err != nil {
		return fmt.Errorf("creating the policy in %s: %w", ns, err)
	}
	return nil
}

// deletePolicy deletes the policy of ns and waits until the controller,
// still running, has let it go, so that the next controller starts without
// it.
func (b *bench) deletePolicy(ctx context.Context, ns string) {
	pol := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"}}
	if err := b.crc.Delete(ctx, pol); err != nil {
		b.logf("  deleting the policy of %s: %v", ns, err)
		return
	}
	err := waitFor(ctx, time.Minute, "the policy of "+ns+" to be gone", func() (bool, string) {
		err := b.crc.Get(ctx, client.ObjectKeyFromObject(pol), pol)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if err != nil {
		b.logf("  %v", err)
	}
}

func (b *bench) waitPolicyReady(ctx context.Context, ns string) error {
	return waitFor(ctx, 90*time.Second, "the policy to be Ready", func() (bool, string) {
		pol := &teardownv1alpha1.TeardownPolicy{}
		if err := b.crc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bench"}, pol); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(pol.Status.Conditions, teardownv1alpha1.ReadyCondition)
		if cond == nil {
			return false, "no Ready condition"
		}
		return cond.Status == metav1.ConditionTrue, cond.Reason + ": " + cond.Message
	})
}

func earliest(ts []time.Time) time.Time {
	first := ts[0]
	for _, t := range ts {
		if t.Before(first) {
			first = t
		}
	}
	return first
}

// finish computes throughput and latency from when each DELETE was sent and
// when the watch saw each object gone.
func finish(run *report.Run, names []string, starts []time.Time, tr *tracker) error {
	lat := make([]time.Duration, len(names))
	var first, last time.Time
	for i, name := range names {
		gone, ok := tr.goneAt(name)
		if !ok {
			return fmt.Errorf("%s: no deletion seen", name)
		}
		lat[i] = gone.Sub(starts[i])
		if first.IsZero() || starts[i].Before(first) {
			first = starts[i]
		}
		if gone.After(last) {
			last = gone
		}
	}
	run.Seconds = round(last.Sub(first).Seconds(), 3)
	run.Throughput = round(float64(len(names))/last.Sub(first).Seconds(), 1)
	run.P50 = round(report.Percentile(lat, 50), 4)
	run.P99 = round(report.Percentile(lat, 99), 4)
	run.Max = round(report.Percentile(lat, 100), 4)
	return nil
}

// finalizerVerbs are the writes a finalizer makes on its targets: patches
// (Teardown, the raw client) and updates (the baseline).
var finalizerVerbs = []string{"PATCH", "PUT", "APPLY"}

// countWrites takes the writes on ConfigMaps from the API server's counters
// of the attach and delete phases: creates and deletes are the driver's,
// every other write is the finalizer's.
func countWrites(run *report.Run, attach, remove apimetrics.Snapshot, n int) {
	count := func(s apimetrics.Snapshot, conflicts bool) float64 {
		total := 0.0
		for _, verb := range finalizerVerbs {
			if conflicts {
				total += s.Conflicts("", "configmaps", verb)
			} else {
				total += s.Requests("", "configmaps", verb)
			}
		}
		return total
	}
	aw, rw := count(attach, false), count(remove, false)
	run.AttachWrites = round(aw/float64(n), 4)
	run.RemoveWrites = round(rw/float64(n), 4)
	run.Writes = aw + rw
	run.Conflicts = count(attach, true) + count(remove, true)
	if run.Writes > 0 {
		run.ConflictShare = round(run.Conflicts/run.Writes, 5)
	}
	for _, s := range []apimetrics.Snapshot{attach, remove} {
		run.DriverWrites += s.Requests("", "configmaps", "POST") + s.Requests("", "configmaps", "DELETE")
	}
	other := map[string]float64{}
	for _, s := range []apimetrics.Snapshot{attach, remove} {
		for name, v := range s.Writes() {
			if !strings.HasSuffix(name, " configmaps") {
				other[name] += v
			}
		}
	}
	if len(other) > 0 {
		run.OtherWrites = other
	}
	run.Reads = remove.Reads()
	run.EtcdRequests = remove.Etcd("", "configmaps")
}

// rss measures a controller's memory with no guarded object and with
// opts.rssObjects of them, then deletes them again so that the next
// controller starts from none.
func (b *bench) rss(ctx context.Context, controller string) (report.RSS, error) {
	m := report.RSS{Controller: controller, Objects: b.opts.rssObjects, DataBytes: b.opts.rssDataBytes}
	ns := "rss-" + controller
	if err := b.createNamespace(ctx, ns); err != nil {
		return m, err
	}
	var c *child
	var err error
	key := policyKey(ns)
	teardown := controller == report.Teardown || controller == report.TeardownBefore
	switch {
	case teardown:
		if err := b.createPolicy(ctx, ns, false, false); err != nil {
			return m, err
		}
		c, err = b.startChild("rss-"+controller, teardownQueues, filepath.Join(b.bin, controller), b.teardownFlags()...)
	default:
		key = baselineKey
		c, err = b.startChild("rss-"+controller, "configmap", filepath.Join(b.bin, "baseline"),
			"--finalizer="+baselineKey, "--selector="+benchLabel+"="+benchValue,
			fmt.Sprintf("--workers=%d", b.opts.tunedWorkers),
			fmt.Sprintf("--kube-api-qps=%d", b.opts.tunedQPS), fmt.Sprintf("--kube-api-burst=%d", 2*b.opts.tunedQPS))
	}
	if err != nil {
		return m, err
	}
	defer c.stop()
	if teardown {
		defer b.deletePolicy(ctx, ns)
		if err := b.waitPolicyReady(ctx, ns); err != nil {
			return m, err
		}
	}
	tr, err := b.track(ctx, ns, key)
	if err != nil {
		return m, err
	}
	defer tr.stop()
	if err := b.probe(ctx, c, ns, key, false, tr); err != nil {
		return m, err
	}
	if m.None, m.AnonNone, err = b.settledRSS(ctx, c); err != nil {
		return m, err
	}
	if m.HeapNone, err = c.heapInuse(ctx); err != nil {
		return m, err
	}
	if m.FloorNone, err = c.floorRSS(ctx); err != nil {
		return m, err
	}
	adds0, _, err := c.queueState(ctx)
	if err != nil {
		return m, err
	}
	names := objectNames("cm", m.Objects)
	if _, err := b.createConfigMaps(ctx, ns, names, nil, m.DataBytes); err != nil {
		return m, err
	}
	if err := tr.waitAttached(ctx, names, phaseTimeout(m.Objects)); err != nil {
		return m, err
	}
	if err := c.waitIdle(ctx, adds0+float64(m.Objects), phaseTimeout(m.Objects)); err != nil {
		return m, err
	}
	if m.Guarded, m.AnonGuarded, err = b.settledRSS(ctx, c); err != nil {
		return m, err
	}
	if m.HeapGuarded, err = c.heapInuse(ctx); err != nil {
		return m, err
	}
	if m.FloorGuarded, err = c.floorRSS(ctx); err != nil {
		return m, err
	}
	if err := c.heapProfile(ctx, filepath.Join(b.out, "profiles", fmt.Sprintf("rss-%s.heap.pprof", controller))); err != nil {
		b.logf("  heap profile of %s: %v", c.name, err)
	}
	m.PerObject = round(float64(m.Guarded-m.None)/float64(m.Objects), 1)
	m.AnonPerObject = round(float64(m.AnonGuarded-m.AnonNone)/float64(m.Objects), 1)
	m.HeapPerObject = round(float64(m.HeapGuarded-m.HeapNone)/float64(m.Objects), 1)
	m.FloorPerObject = round(float64(m.FloorGuarded-m.FloorNone)/float64(m.Objects), 1)
	b.logf("  %s: RSS %.1f MiB with none, %.1f MiB with %d guarded: %.0f B/object (anonymous %.0f B/object, after FreeOSMemory %.0f B/object, live heap %.0f B/object)",
		controller, float64(m.None)/(1<<20), float64(m.Guarded)/(1<<20), m.Objects, m.PerObject, m.AnonPerObject, m.FloorPerObject, m.HeapPerObject)
	// Leave no guarded object behind for the next controller's "none".
	if _, err := b.deleteConfigMaps(ctx, ns, names, b.driverWorkers, nil); err != nil {
		return m, err
	}
	return m, tr.waitGone(ctx, names, phaseTimeout(m.Objects))
}

// settledRSS waits opts.rssSettle, then returns the median of three VmRSS
// readings a second apart.
func (b *bench) settledRSS(ctx context.Context, c *child) (rss, anon int64, err error) {
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(b.opts.rssSettle):
	}
	var rssSamples, anonSamples []int64
	for i := range 3 {
		if i > 0 {
			time.Sleep(time.Second)
		}
		m, err := c.memory()
		if err != nil {
			return 0, 0, err
		}
		rssSamples, anonSamples = append(rssSamples, m.rss), append(anonSamples, m.anon)
	}
	slices.Sort(rssSamples)
	slices.Sort(anonSamples)
	return rssSamples[1], anonSamples[1], nil
}
