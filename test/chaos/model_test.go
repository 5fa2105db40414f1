/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// modelRun is one seed's run: the generator's state and the harness.
type modelRun struct {
	t     *testing.T
	rng   *rand.Rand
	seed  uint64
	run   string
	hooks *modelHooks

	platform   string
	tenants    []string
	namespaces []string // every namespace of the run, deleted ones too
	objs       []*genObj
	pols       []*genPol
	seq        int
	genWrites  map[string]bool // resourceVersions of the generator's ConfigMap writes
	// polWrites: each policy write of the generator that succeeded (when
	// it was sent, and the spec), by policy UID and the generation it made
	// ("<uid>/<generation>").
	polWrites    map[string]polWrite
	behaviourSet map[string]bool

	main     *procctl.Controller
	replicas []*procctl.Controller
	counts   map[string]int
	refused  int
	log      []string
	start    time.Time
	owedLeft []owedKey // what liveness found still owed at its bound

	// The hostile tenant's and the latency probe's (model_hostile_test.go).
	bursts     map[string][]string // namespace: the policies of its burst
	quiet      bool                // no leader-election phase: the probe may run
	probeTimes []time.Duration
	lateProbes []string
}

func (m *modelRun) next() int { m.seq++; return m.seq }

func (m *modelRun) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf("+%6.1fs ", time.Since(m.start).Seconds())+fmt.Sprintf(format, args...))
}

// TestModel is a randomized model test of the contract (docs/chaos.md): a
// seeded generator drives policies, objects, tenants' records, namespace
// deletions, controller kills and kube-apiserver restarts; an independent
// checker reads every watch event and the receivers' ledger and fails on
// any finalizer removal the contract does not justify, any webhook call on
// an object its policy never selected, a teardown two policies ran, a
// message that names another namespace's object, and any owed cleanup,
// policy or worker that does not finish once everything is healthy.
//
// TEARDOWN_MODEL_SEED picks the first seed (1 by default),
// TEARDOWN_MODEL_SEEDS how many seeds from it (1), TEARDOWN_MODEL_STEPS the
// steps per seed (100).
func TestModel(t *testing.T) {
	testenv.SkipShort(t)
	first := uint64(envInt("TEARDOWN_MODEL_SEED", 1))
	seeds := int(envInt("TEARDOWN_MODEL_SEEDS", 1))
	steps := int(envInt("TEARDOWN_MODEL_STEPS", 100))
	var total modelFigures
	for i := range seeds {
		seed := first + uint64(i)
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			f := runModel(t, seed, steps, fmt.Sprintf("r%d", seed))
			total.add(f)
		})
	}
	t.Logf("MODEL FIGURES: %d seeds from %d, %d steps each\n%s", seeds, first, steps, total.String())
}

func runModel(t *testing.T, seed uint64, steps int, run string) modelFigures {
	t.Logf("seed %d, %d steps: TEARDOWN_MODEL_SEED=%d TEARDOWN_MODEL_STEPS=%d replays the schedule", seed, steps, seed, steps)
	m := &modelRun{t: t, rng: rand.New(rand.NewPCG(seed, 0x7ea2d0)), seed: seed, run: run,
		genWrites: map[string]bool{}, polWrites: map[string]polWrite{}, behaviourSet: map[string]bool{}, counts: map[string]int{}, bursts: map[string][]string{}}
	m.hooks = newModelHooks(t)
	ctx := context.Background()

	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	recCtx, stopRec := context.WithCancel(ctx)
	recDone := rec.start(recCtx, modelSources(wc))
	defer func() { stopRec(); <-recDone }()

	// Registered first, so it runs last: after the controllers are killed
	// and newNamespace's cleanups, wait until the run's namespaces are gone,
	// so that the next seed's controller never serves what is left of them.
	t.Cleanup(m.waitNamespacesGone)
	m.platform = newNamespace(t)
	m.namespaces = append(m.namespaces, m.platform)
	if err := m.setTier(ctx, m.platform, "platform"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		m.tenants = append(m.tenants, m.newTenant(ctx))
	}
	t.Cleanup(m.removeClusterPolicies)
	installProtectRecords(t, ctx)
	m.main = startController(t, "controller", "--status-interval=5s")
	m.start = time.Now()

	m.generate(ctx, steps)

	m.logf("generator done; every receiver answers Success from now on, and the large objects are trimmed")
	m.hooks.heal()
	m.trimLarge(ctx)
	for _, r := range m.replicas {
		_ = r.Kill()
	}
	if !m.main.Running() {
		if err := m.main.Start(); err != nil {
			t.Fatal(err)
		}
	}
	live := m.liveness(ctx)
	time.Sleep(2 * time.Second) // the watches deliver the last events
	stopRec()
	<-recDone
	recs, relists := rec.snapshot()
	c := newChecker(m.facts(), recs, m.hooks.entries())
	c.check()
	c.violations = append(c.violations, live...)
	c.violations = append(c.violations, m.lateProbes...)
	for _, o := range m.owedLeft {
		c.owedNotFinished(o)
	}
	f := c.figures(steps, m, relists)

	t.Logf("seed %d: %s", seed, f.String())
	path := filepath.Join(logDir(t), fmt.Sprintf("model-seed-%d.log", seed))
	_ = os.WriteFile(path, []byte(strings.Join(m.log, "\n")+"\n\nVIOLATIONS\n"+strings.Join(c.violations, "\n\n")+"\n"), 0o644)
	if len(c.violations) > 0 {
		t.Logf("step log and every violation: %s; last steps:\n%s", path, strings.Join(first(m.log[max(0, len(m.log)-40):], 40), "\n"))
		for _, v := range first(c.violations, 25) {
			t.Errorf("seed %d: %s", seed, v)
		}
	}
	return f
}

// generate runs the steps, with controller kills, kube-apiserver restarts
// and a phase of two replicas under leader election among them.
func (m *modelRun) generate(ctx context.Context, steps int) {
	acts := m.actions()
	nextKill := 8 + m.rng.IntN(20)
	apiAt, leAt := map[int]bool{}, map[int]bool{}
	for block := 0; block < steps; block += 250 {
		n := min(250, steps-block)
		if n >= 50 {
			apiAt[block+10+m.rng.IntN(n-20)] = true
		}
		if n >= 120 {
			leAt[block+20+m.rng.IntN(n-60)] = true
		}
	}
	leEnd := -1
	var paused *pause
	for step := range steps {
		if paused != nil {
			if time.Since(paused.at) >= paused.dur {
				m.resume(paused)
				paused = nil
			} else if step == leEnd {
				leEnd++ // the phase lasts until the paused replica resumed
			}
		}
		if leAt[step] && step <= leEnd {
			// A phase is still on (a paused replica extends it past the
			// next phase's start; seed 139): the next one starts after it.
			delete(leAt, step)
			leAt[step+1] = true
		}
		switch {
		case step == leEnd:
			m.endLeaderElection()
		case leAt[step]:
			leEnd = step + 30
			m.startLeaderElection()
		case step == leEnd-22 && leEnd > 0 && m.rng.Float64() < 0.7:
			paused = m.pauseReplica()
		case step == leEnd-15 && leEnd > 0 && paused == nil:
			m.killLeader()
		case apiAt[step]:
			down := time.Duration(1+m.rng.IntN(3)) * time.Second
			m.logf("kube-apiserver SIGKILL, down %s", down)
			if err := env.RestartAPIServer(testenv.APIServerRestart{Down: down}); err != nil {
				m.t.Fatalf("restarting kube-apiserver: %v", err)
			}
			m.counts["apiserver-restart"]++
			m.logf("kube-apiserver ready")
		case step >= nextKill && leEnd < step:
			m.restartController()
			nextKill = step + 10 + m.rng.IntN(20)
		}
		if leEnd < step && !m.main.Running() {
			// It exited by itself, as at a start while kube-apiserver was
			// down (it cannot discover the API): start it again, as the
			// kubelet would, rather than leave the cluster without one
			// until the next kill.
			m.logf("controller exited; started again")
			m.counts["controller-exit"]++
			if err := m.main.Start(); err != nil {
				m.t.Fatalf("starting the controller: %v", err)
			}
		}
		// Few policies guard little: create them more often then.
		weight := func(a action) float64 {
			if a.name == "create-policy" && len(m.livePolicies("")) < 3 {
				return 5 * a.weight
			}
			return a.weight
		}
		var sum float64
		for _, a := range acts {
			sum += weight(a)
		}
		r := m.rng.Float64() * sum
		m.quiet = leEnd < step
		for _, a := range acts {
			if r -= weight(a); r > 0 {
				continue
			}
			desc, err := a.do(ctx)
			m.counts[a.name]++
			if err != nil {
				m.refused++
				desc += " (refused: " + shortErr(err) + ")"
			}
			m.logf("%4d %s", step, desc)
			break
		}
		time.Sleep(time.Duration(30+m.rng.IntN(270)) * time.Millisecond)
	}
	if paused != nil {
		// The steps ran out during the pause: it still ends in a resumption.
		time.Sleep(time.Until(paused.at.Add(paused.dur)))
		m.resume(paused)
	}
}

func (m *modelRun) restartController() {
	if m.rng.Float64() < 0.8 {
		_ = m.main.Kill()
		m.logf("controller SIGKILL")
	} else {
		_ = m.main.Stop(10 * time.Second)
		m.logf("controller SIGTERM")
	}
	m.counts["controller-kill"]++
	time.Sleep(time.Duration(m.rng.IntN(500)) * time.Millisecond)
	if err := m.main.Start(); err != nil {
		m.t.Fatalf("starting the controller: %v", err)
	}
}

// startLeaderElection replaces the controller by two replicas with leader
// election (their Lease in the platform namespace).
func (m *modelRun) startLeaderElection() {
	_ = m.main.Kill()
	m.counts["controller-kill"]++
	if m.replicas == nil {
		m.replicas = []*procctl.Controller{
			// Both seal their records with the keys of the platform
			// namespace, as installed (the chart passes its namespace).
			newController(m.t, "replica-1", m.platform, "--status-interval=5s", "--cluster-resource-namespace="+m.platform),
			newController(m.t, "replica-2", m.platform, "--status-interval=5s", "--cluster-resource-namespace="+m.platform),
		}
	}
	for _, r := range m.replicas {
		if err := r.Start(); err != nil {
			m.t.Fatalf("starting %s: %v", r.Name(), err)
		}
	}
	m.counts["leader-election"]++
	m.logf("controller SIGKILL; two replicas with leader election")
}

// pause is a replica stopped with SIGSTOP, to resume once dur passed.
type pause struct {
	r    *procctl.Controller
	at   time.Time
	dur  time.Duration
	role string
}

// pauseReplica stops the leader (or, one time in three, the standby) with
// SIGSTOP for longer than its lease (15 s): the other replica takes the
// lease over and acts while it sleeps, and it resumes with its memory of
// before, as after a long GC pause or a frozen VM. The generator goes on
// meanwhile.
func (m *modelRun) pauseReplica() *pause {
	var leader, standby *procctl.Controller
	for _, r := range m.replicas {
		switch {
		case r.Running() && r.IsLeader():
			leader = r
		case r.Running():
			standby = r
		}
	}
	p := &pause{r: leader, role: "leader", dur: 16*time.Second + time.Duration(m.rng.IntN(4000))*time.Millisecond}
	if m.rng.IntN(3) == 0 || leader == nil {
		p.r, p.role = standby, "standby"
	}
	if p.r == nil {
		m.logf("no replica to pause")
		return nil
	}
	if err := p.r.Pause(); err != nil {
		m.logf("pausing %s: %v", p.r.Name(), err)
		return nil
	}
	p.at = time.Now()
	m.counts["pause"]++
	m.logf("SIGSTOP the %s %s for %s", p.role, p.r.Name(), p.dur.Round(100*time.Millisecond))
	return p
}

func (m *modelRun) resume(p *pause) {
	if err := p.r.Resume(); err != nil {
		m.logf("resuming %s: %v", p.r.Name(), err)
		return
	}
	m.logf("SIGCONT the %s %s after %s", p.role, p.r.Name(), time.Since(p.at).Round(100*time.Millisecond))
}

func (m *modelRun) killLeader() {
	for _, r := range m.replicas {
		if r.Running() && r.IsLeader() {
			_ = r.Kill()
			m.counts["controller-kill"]++
			m.logf("SIGKILL the leader %s", r.Name())
			return
		}
	}
	m.logf("no leader yet to kill")
}

func (m *modelRun) endLeaderElection() {
	for _, r := range m.replicas {
		_ = r.Kill()
	}
	if err := m.main.Start(); err != nil {
		m.t.Fatalf("starting the controller: %v", err)
	}
	m.logf("replicas SIGKILLed; the single controller again")
}

// removeClusterPolicies deletes the run's ClusterTeardownPolicies once its
// controllers are gone, so that no later run inherits them.
func (m *modelRun) removeClusterPolicies() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := k8s.List(ctx, list); err != nil {
		return
	}
	for i := range list.Items {
		p := &list.Items[i]
		if !strings.HasPrefix(p.Name, "cp-"+m.run+"-") && !strings.HasPrefix(p.Name, "probe-"+m.run) {
			continue
		}
		_ = k8s.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		_ = k8s.Delete(ctx, p)
	}
}

func (m *modelRun) waitNamespacesGone() {
	if !poll(90*time.Second, time.Second, func(ctx context.Context) (bool, error) {
		left := false
		for _, ns := range m.namespaces {
			if gone, _ := testenv.Gone(k8s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})(ctx); !gone {
				left = true
				forceDelete(ns)
			}
		}
		return !left, nil
	}) {
		m.t.Logf("harness: namespaces of seed %d still there after 90s", m.seed)
	}
}

// facts is what the checker may know beside the API and the ledger: which
// namespaces belong to the run, and which ConfigMap writes were the
// generator's (a tenant's or an operator's, never the controller's).
func (m *modelRun) facts() modelFacts {
	var ids []string
	for _, p := range m.pols {
		ids = append(ids, p.id())
	}
	return modelFacts{Namespaces: m.namespaces, TenantWrites: m.genWrites, PolicyWrites: m.polWrites, Policies: ids, Grep: func(name string) []string {
		var out []string
		for _, c := range append([]*procctl.Controller{m.main}, m.replicas...) {
			for _, l := range c.Grep(`"`+name+`"`, 6) {
				if len(l) > 400 {
					l = l[:400] + "…"
				}
				out = append(out, c.Name()+": "+l)
			}
		}
		return out
	}}
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// modelFigures are what a run did and found.
type modelFigures struct {
	Seeds, Steps, Removals, Calls, Kills, APIRestarts, LeaderElections, Pauses, Relists int
	// The hostile tenants': calls held until the controller gave up,
	// bursts of policies, objects too large to guard; and the latency
	// probe's times during the run.
	HeldCalls, Bursts, Large int
	Probes                   []time.Duration
	ByJustification          map[string]int
	ByRule                   map[string]int
}

func (f *modelFigures) add(o modelFigures) {
	f.Seeds += o.Seeds
	f.Steps += o.Steps
	f.Removals += o.Removals
	f.Calls += o.Calls
	f.Kills += o.Kills
	f.APIRestarts += o.APIRestarts
	f.LeaderElections += o.LeaderElections
	f.Pauses += o.Pauses
	f.Relists += o.Relists
	f.HeldCalls += o.HeldCalls
	f.Bursts += o.Bursts
	f.Large += o.Large
	f.Probes = append(f.Probes, o.Probes...)
	for _, m := range []struct{ dst, src *map[string]int }{{&f.ByJustification, &o.ByJustification}, {&f.ByRule, &o.ByRule}} {
		if *m.dst == nil {
			*m.dst = map[string]int{}
		}
		for k, v := range *m.src {
			(*m.dst)[k] += v
		}
	}
}

func (f modelFigures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  seeds %d, steps run %d, webhook calls %d, controller kills %d, kube-apiserver restarts %d, leader-election phases %d, replicas paused past their lease %d, watch relists %d\n",
		f.Seeds, f.Steps, f.Calls, f.Kills, f.APIRestarts, f.LeaderElections, f.Pauses, f.Relists)
	fmt.Fprintf(&b, "  hostile tenants: calls held until the controller gave up %d, burst actions (%d policies created, or deleted) %d, objects too large to guard %d\n",
		f.HeldCalls, burstSize, f.Bursts, f.Large)
	if len(f.Probes) > 0 {
		p := slices.Clone(f.Probes)
		slices.Sort(p)
		fmt.Fprintf(&b, "  latency probes during the run %d (a new policy served, an object guarded, deleted and released): median %s, max %s (each stage bound %s)\n",
			len(p), p[len(p)/2].Round(10*time.Millisecond), p[len(p)-1].Round(10*time.Millisecond), probeBound)
	}
	fmt.Fprintf(&b, "  removals checked %d: %s\n", f.Removals, mapString(f.ByJustification))
	total := 0
	for _, v := range f.ByRule {
		total += v
	}
	fmt.Fprintf(&b, "  violations %d: %s", total, mapString(f.ByRule))
	return b.String()
}

func mapString(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+" "+strconv.Itoa(m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
