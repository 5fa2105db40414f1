/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

// gate says when the cleanup of one object may succeed: until then its
// webhook answers InProgress. Most objects open at a random moment of the
// window; two batches open at the moment of an event (a controller kill,
// the kube-apiserver restart), to measure how fast the backlog drains after
// it; a last batch opens once every event is over, so that each event
// happens mid-teardown.
type gate struct {
	batch  string        // "", "kill", "apiserver" or "final"
	offset time.Duration // after the deletion starts, for batch ""
}

// chaosRun is the shared state of one TestChaos run.
type chaosRun struct {
	t      *testing.T
	n      int
	ns     string
	window time.Duration

	names []string
	gates map[string]gate
	uids  map[string]types.UID

	start      atomic.Int64 // unix nanos when deletion began
	killOpen   atomic.Int64 // unix nanos when the kill batch opened
	apiOpen    atomic.Int64 // unix nanos when the apiserver batch opened
	finalOpen  atomic.Int64 // unix nanos when the final batch opened
	webhookMu  sync.Mutex
	webhookRng *rand.Rand
	openCalls  map[string]int // calls once the object's cleanup could succeed, under webhookMu
	injected   atomic.Int64   // 500s answered

	delMu       sync.Mutex
	deletedAt   map[types.UID]time.Time
	unobserved  map[types.UID]time.Time // gone, but no DELETED event seen: when noticed
	watchResets int

	kills          atomic.Int64
	killsMid       atomic.Int64 // kills while objects were left
	apiRestarts    int
	apiUpAt        time.Time
	killUpAt       time.Time
	failover       time.Duration
	killBatchSize  int
	apiBatchSize   int
	finalBatchSize int
	controllers    []*procctl.Controller
}

func (r *chaosRun) logEvent(format string, args ...any) {
	at := time.Duration(0)
	if s := r.start.Load(); s != 0 {
		at = time.Since(time.Unix(0, s))
	}
	r.t.Logf("+%6.1fs %s", at.Seconds(), fmt.Sprintf(format, args...))
}

// open says whether the cleanup of the named object may succeed now.
func (r *chaosRun) open(name string) bool {
	g := r.gates[name]
	switch g.batch {
	case "kill":
		return r.killOpen.Load() != 0
	case "apiserver":
		return r.apiOpen.Load() != 0
	case "final":
		return r.finalOpen.Load() != 0
	}
	s := r.start.Load()
	return s != 0 && time.Since(time.Unix(0, s)) >= g.offset
}

// openedAt says when the named object's gate opened (zero if not yet).
func (r *chaosRun) openedAt(name string) time.Time {
	g := r.gates[name]
	var at int64
	switch g.batch {
	case "kill":
		at = r.killOpen.Load()
	case "apiserver":
		at = r.apiOpen.Load()
	case "final":
		at = r.finalOpen.Load()
	default:
		if s := r.start.Load(); s != 0 {
			return time.Unix(0, s).Add(g.offset)
		}
	}
	if at == 0 {
		return time.Time{}
	}
	return time.Unix(0, at)
}

func (r *chaosRun) decide(req webhookRequest) answer {
	r.webhookMu.Lock()
	delay := time.Duration(r.webhookRng.Int63n(int64(200 * time.Millisecond)))
	fail := r.webhookRng.Float64() < 0.10
	r.webhookMu.Unlock()
	time.Sleep(delay)
	if fail {
		r.injected.Add(1)
		if r.open(req.Object.Name) {
			r.webhookMu.Lock()
			r.openCalls[req.Object.Name]++
			r.webhookMu.Unlock()
		}
		return serverErr
	}
	if !r.open(req.Object.Name) {
		return inProgress
	}
	r.webhookMu.Lock()
	r.openCalls[req.Object.Name]++
	r.webhookMu.Unlock()
	return success
}

func (r *chaosRun) remaining() int {
	r.delMu.Lock()
	defer r.delMu.Unlock()
	return r.n - len(r.deletedAt) - len(r.unobserved)
}

// goneAll says whether every named object is gone.
func (r *chaosRun) goneAll(names []string) bool {
	r.delMu.Lock()
	defer r.delMu.Unlock()
	for _, name := range names {
		uid := r.uids[name]
		_, seen := r.deletedAt[uid]
		_, noticed := r.unobserved[uid]
		if !seen && !noticed {
			return false
		}
	}
	return true
}

// watchDeletions records the time of each DELETED event of the namespace's
// ConfigMaps, from resourceVersion rv on, until ctx ends. If the watch
// cannot resume (its resourceVersion expired), it lists again and notes the
// objects that went in between as unobserved.
func (r *chaosRun) watchDeletions(ctx context.Context, rv string) {
	lw := &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().ConfigMaps(r.ns).Watch(ctx, o)
		},
	}
	for ctx.Err() == nil {
		w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
		if err != nil {
			r.t.Errorf("watching ConfigMaps: %v", err)
			return
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				r.logEvent("the ConfigMap watch failed: %v", apierrors.FromObject(ev.Object))
			}
			if ev.Type == watch.Deleted {
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
					r.delMu.Lock()
					if _, dup := r.deletedAt[cm.UID]; !dup {
						r.deletedAt[cm.UID] = time.Now()
					}
					r.delMu.Unlock()
				}
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return
		}
		// The watch gave up: list, and resume from there.
		var list *corev1.ConfigMapList
		for ctx.Err() == nil {
			if list, err = cs.CoreV1().ConfigMaps(r.ns).List(ctx, metav1.ListOptions{}); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if ctx.Err() != nil {
			return
		}
		present := map[types.UID]bool{}
		for _, cm := range list.Items {
			present[cm.UID] = true
		}
		now := time.Now()
		r.logEvent("the ConfigMap watch resumes from a new list")
		r.delMu.Lock()
		r.watchResets++
		for _, uid := range r.uids {
			_, seen := r.deletedAt[uid]
			if !present[uid] && !seen {
				if _, noted := r.unobserved[uid]; !noted {
					r.unobserved[uid] = now
				}
			}
		}
		r.delMu.Unlock()
		rv = list.ResourceVersion
	}
}

// TestChaos deletes TEARDOWN_CHAOS_N guarded ConfigMaps at once while the
// controller is killed with SIGKILL at random moments, kube-apiserver
// restarts, two replicas with leader election run and the leader is killed,
// and objects and the policy are edited mid-teardown. The cleanup webhook
// answers after a random delay, fails about 10% of calls with HTTP 500, and
// answers InProgress until each object's gate opens (spread over a window,
// so that every event happens mid-teardown). No object may go before its
// webhook answered Success, every object must get one, and all must go
// within a bound.
func TestChaos(t *testing.T) {
	testenv.SkipShort(t)
	n := int(envInt("TEARDOWN_CHAOS_N", 200))
	seed := envInt("TEARDOWN_CHAOS_SEED", time.Now().UnixNano())
	t.Logf("seed %d (TEARDOWN_CHAOS_SEED=%d replays the schedule), N=%d", seed, seed, n)
	rng := rand.New(rand.NewSource(seed))
	window := min(max(time.Duration(n)*60*time.Millisecond, 30*time.Second), 90*time.Second)

	const key = "chaos.example.com/cleanup"
	r := &chaosRun{
		t: t, n: n, ns: newNamespace(t), window: window,
		gates:      map[string]gate{},
		uids:       map[string]types.UID{},
		webhookRng: rand.New(rand.NewSource(seed + 1)),
		openCalls:  map[string]int{},
		deletedAt:  map[types.UID]time.Time{},
		unobserved: map[types.UID]time.Time{},
	}
	tiers := []string{"a", "b", "c"}
	objs := make([]*corev1.ConfigMap, n)
	for i := range n {
		name := fmt.Sprintf("cm-%04d", i)
		r.names = append(r.names, name)
		g := gate{offset: time.Duration(rng.Int63n(int64(window)))}
		switch p := rng.Float64(); {
		case p < 0.15:
			g = gate{batch: "kill"}
			r.killBatchSize++
		case p < 0.30:
			g = gate{batch: "apiserver"}
			r.apiBatchSize++
		case p < 0.40:
			g = gate{batch: "final"}
			r.finalBatchSize++
		}
		r.gates[name] = g
		objs[i] = configMap(r.ns, name, labels("chaos", "yes", "tier", tiers[rng.Intn(len(tiers))]))
	}
	srv := newCleanupServer(t, r.decide)

	a := startController(t, "controller")
	r.controllers = append(r.controllers, a)
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: "chaos"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key,
			Targets:   []teardownv1alpha1.Target{configMapTarget(labels("chaos", "yes"))},
			Steps:     []teardownv1alpha1.Step{srv.step("cleanup")},
		},
	}
	create(t, pol)
	if cond := waitReady(t, pol, 60*time.Second); cond.Status != metav1.ConditionTrue {
		t.Fatalf("policy not Ready: %s: %s", cond.Reason, cond.Message)
	}

	// Create the objects and wait until each carries the key.
	ctx := context.Background()
	parallel(32, n, func(i int) {
		if err := k8s.Create(ctx, objs[i]); err != nil {
			t.Errorf("creating %s: %v", objs[i].Name, err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	for _, o := range objs {
		r.uids[o.Name] = o.UID
	}
	var rv string
	testenv.Eventually(t, 2*time.Minute, "every ConfigMap to carry "+key, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().ConfigMaps(r.ns).List(ctx, metav1.ListOptions{LabelSelector: "chaos=yes"})
		if err != nil {
			return false, err
		}
		guarded := 0
		for _, cm := range list.Items {
			if slices.Contains(cm.Finalizers, key) {
				guarded++
			}
		}
		rv = list.ResourceVersion
		return guarded == n, nil
	})
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); r.watchDeletions(watchCtx, rv) }()
	defer func() { stopWatch(); <-watchDone }()

	// Delete them all at once.
	r.start.Store(time.Now().UnixNano())
	start := time.Now()
	parallel(32, n, func(i int) {
		if err := k8s.Delete(ctx, objs[i]); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", objs[i].Name, err)
		}
	})
	r.logEvent("deleted %d ConfigMaps (window %s; cleanups open: %d at random in the window, %d at a controller kill, %d at the kube-apiserver restart, %d after the last event)",
		n, window, n-r.killBatchSize-r.apiBatchSize-r.finalBatchSize, r.killBatchSize, r.apiBatchSize, r.finalBatchSize)

	// The schedule: 22 kills at random moments, with the other events
	// among them; a random pause before each, so that the run lasts about
	// the window plus the time the longer events take.
	specials := map[int]string{3: "edit", 7: "kill-batch", 12: "apiserver", 17: "leader-election"}
	var plan []string
	for i := range 22 {
		if s, ok := specials[i]; ok {
			plan = append(plan, s)
		}
		plan = append(plan, "kill")
	}
	maxGap := 2 * window / time.Duration(len(plan)+1)

	kill := func(c *procctl.Controller) {
		if !c.Running() {
			return
		}
		if r.remaining() > 0 {
			r.killsMid.Add(1)
		}
		if err := c.Kill(); err != nil {
			t.Errorf("killing %s: %v", c.Name(), err)
		}
		r.kills.Add(1)
	}
	startC := func(c *procctl.Controller) {
		if err := c.Start(); err != nil {
			t.Errorf("starting %s: %v", c.Name(), err)
		}
	}
	// waitDrained waits until every object whose gate is open by now is
	// gone, so that the drain after an event is measured alone.
	waitDrained := func(limit time.Duration) {
		var open []string
		for _, name := range r.names {
			if r.open(name) {
				open = append(open, name)
			}
		}
		poll(limit, 50*time.Millisecond, func(context.Context) (bool, error) { return r.goneAll(open), nil })
	}
	var drainAfterKill, drainAfterAPI time.Duration
	for _, ev := range plan {
		time.Sleep(100*time.Millisecond + time.Duration(rng.Int63n(int64(maxGap))))
		switch ev {
		case "kill":
			kill(a)
			r.logEvent("SIGKILL controller (kill %d)", r.kills.Load())
			time.Sleep(time.Duration(rng.Int63n(int64(300 * time.Millisecond))))
			startC(a)
		case "edit":
			r.edit(t, rng, pol, srv)
		case "kill-batch":
			kill(a)
			r.killOpen.Store(time.Now().UnixNano())
			r.logEvent("SIGKILL controller (kill %d); %d objects' cleanups open now", r.kills.Load(), r.killBatchSize)
			startC(a)
			r.killUpAt = time.Now()
			waitDrained(2 * time.Minute)
			drainAfterKill = time.Since(r.killUpAt)
			r.logEvent("every open cleanup drained %s after the controller restarted", drainAfterKill.Round(10*time.Millisecond))
		case "apiserver":
			r.apiOpen.Store(time.Now().UnixNano())
			graceful := os.Getenv("TEARDOWN_CHAOS_APISERVER_STOP") == "graceful"
			how := "SIGKILL"
			if graceful {
				how = "SIGTERM (graceful)"
			}
			r.logEvent("kube-apiserver %s, down 5s once it exited; %d objects' cleanups open now", how, r.apiBatchSize)
			if err := env.RestartAPIServer(testenv.APIServerRestart{Graceful: graceful, Down: 5 * time.Second}); err != nil {
				t.Fatalf("restarting kube-apiserver: %v", err)
			}
			r.apiRestarts++
			r.apiUpAt = time.Now()
			r.logEvent("kube-apiserver ready again")
			waitDrained(3 * time.Minute)
			drainAfterAPI = time.Since(r.apiUpAt)
			r.logEvent("every open cleanup drained %s after kube-apiserver was back", drainAfterAPI.Round(10*time.Millisecond))
		case "leader-election":
			r.leaderElection(t, rng, a, kill, startC)
		}
	}

	if d := time.Until(start.Add(window)); d > 0 {
		time.Sleep(d)
	}
	r.finalOpen.Store(time.Now().UnixNano())
	r.logEvent("chaos over; the last %d cleanups open now", r.finalBatchSize)
	const bound = 2 * time.Minute
	drained := poll(bound, 100*time.Millisecond, func(context.Context) (bool, error) {
		return r.remaining() == 0, nil
	})
	drain := time.Since(start)
	stopWatch()
	<-watchDone

	// Early removals: a DELETED event with no Success before it.
	var early, missing []string
	calls, maxCalls, afterSuccess, maxAfter := 0, 0, 0, 0
	srv.mu.Lock()
	for _, name := range r.names {
		uid := r.uids[name]
		ok, succeeded := srv.firstSuccess[uid]
		r.delMu.Lock()
		del, seen := r.deletedAt[uid]
		noticed, gone := r.unobserved[uid]
		r.delMu.Unlock()
		switch {
		case seen && !succeeded:
			early = append(early, fmt.Sprintf("%s (uid %s): DELETED at +%s, its cleanup never succeeded (%d calls)", name, uid, del.Sub(start).Round(time.Millisecond), srv.calls[uid]))
		case seen && !ok.Before(del):
			early = append(early, fmt.Sprintf("%s: DELETED at +%s, before its first Success at +%s", name, del.Sub(start).Round(time.Millisecond), ok.Sub(start).Round(time.Millisecond)))
		case gone && !succeeded:
			early = append(early, fmt.Sprintf("%s: gone (noticed at +%s), its cleanup never succeeded", name, noticed.Sub(start).Round(time.Millisecond)))
		}
		if !succeeded {
			missing = append(missing, name)
		}
		calls += srv.calls[uid]
		maxCalls = max(maxCalls, srv.calls[uid])
		afterSuccess += srv.callsAfterSuccess[uid]
		maxAfter = max(maxAfter, srv.callsAfterSuccess[uid])
	}
	total, steps := srv.total, fmt.Sprint(srv.stepSuccesses)
	srv.mu.Unlock()
	openCalls, maxOpen := 0, 0
	r.webhookMu.Lock()
	for _, c := range r.openCalls {
		openCalls += c
		maxOpen = max(maxOpen, c)
	}
	r.webhookMu.Unlock()

	var lastOpen time.Time
	for _, name := range r.names {
		if at := r.openedAt(name); at.After(lastOpen) {
			lastOpen = at
		}
	}
	var lastDeleted time.Time
	r.delMu.Lock()
	for _, at := range r.deletedAt {
		if at.After(lastDeleted) {
			lastDeleted = at
		}
	}
	observed, unobserved, resets := len(r.deletedAt), len(r.unobserved), r.watchResets
	r.delMu.Unlock()

	t.Logf("CHAOS FIGURES (seed %d, N=%d, window %s)", seed, n, window)
	t.Logf("  controller kills (SIGKILL):        %d (%d while objects were left; leader failover took %s)", r.kills.Load(), r.killsMid.Load(), r.failover.Round(10*time.Millisecond))
	t.Logf("  kube-apiserver restarts:           %d", r.apiRestarts)
	t.Logf("  webhook calls:                     %d (%d answered 500); per object mean %.1f, max %d", total, r.injected.Load(), float64(calls)/float64(n), maxCalls)
	t.Logf("  once the cleanup could succeed:    per object mean %.1f, max %d (2 steps after the edit; 10%% answered 500)", float64(openCalls)/float64(n), maxOpen)
	t.Logf("  webhook calls after a Success:     %d; per object max %d; Successes per step %s", afterSuccess, maxAfter, steps)
	if drained {
		t.Logf("  time to drain:                     %s from the deletion; %s after the last cleanups could succeed", drain.Round(10*time.Millisecond), lastDeleted.Sub(lastOpen).Round(10*time.Millisecond))
	} else {
		t.Logf("  time to drain:                     not drained after %s (%d objects left)", drain.Round(time.Second), r.remaining())
	}
	t.Logf("  drain after a controller kill:     %s (%d objects opened at the kill)", drainAfterKill.Round(10*time.Millisecond), r.killBatchSize)
	t.Logf("  drain after kube-apiserver restart: %s (%d objects opened as it went down)", drainAfterAPI.Round(10*time.Millisecond), r.apiBatchSize)
	t.Logf("  kill batch, after the restart:     %s", r.breakdown(srv, "kill", r.killUpAt))
	t.Logf("  apiserver batch, after it is back: %s", r.breakdown(srv, "apiserver", r.apiUpAt))
	t.Logf("  deletions observed by the watch:   %d (%d gone unobserved, %d watch relists)", observed, unobserved, resets)
	t.Logf("  early removals:                    %d; objects without a Success: %d", len(early), len(missing))

	for _, e := range first(early, 20) {
		t.Errorf("early removal: %s", e)
	}
	if len(early) > 0 {
		t.Logf("controller log lines about the first early removals:\n%s", evidence(r.controllers, early))
	}
	if len(missing) > 0 {
		t.Errorf("%d objects never got a Success from their cleanup webhook: %s", len(missing), strings.Join(first(missing, 20), ", "))
	}
	if !drained {
		left := r.leftovers()
		t.Errorf("not every object went within %s of the end of the chaos: %d left; first ones:\n%s", bound, len(left), strings.Join(first(left, 10), "\n"))
	}
	if r.killsMid.Load() < 20 {
		t.Errorf("harness: only %d kills happened while objects were left (want at least 20)", r.killsMid.Load())
	}
}

// breakdown says, for the objects of a batch, how long after since their
// first webhook call, their first Success and their DELETED event came
// (median and maximum), to tell a slow controller from a slow API.
func (r *chaosRun) breakdown(srv *cleanupServer, batch string, since time.Time) string {
	if since.IsZero() {
		return "-"
	}
	inBatch := map[types.UID]bool{}
	for _, name := range r.names {
		if r.gates[name].batch == batch {
			inBatch[r.uids[name]] = true
		}
	}
	firstCall := map[types.UID]time.Time{}
	srv.mu.Lock()
	for _, c := range srv.log {
		if inBatch[c.UID] && c.At.After(since) {
			if _, ok := firstCall[c.UID]; !ok {
				firstCall[c.UID] = c.At
			}
		}
	}
	var calls, successes, deletions []time.Duration
	for uid := range inBatch {
		if at, ok := firstCall[uid]; ok {
			calls = append(calls, at.Sub(since))
		}
		if at, ok := srv.firstSuccess[uid]; ok && at.After(since) {
			successes = append(successes, at.Sub(since))
		}
	}
	srv.mu.Unlock()
	r.delMu.Lock()
	for uid := range inBatch {
		if at, ok := r.deletedAt[uid]; ok && at.After(since) {
			deletions = append(deletions, at.Sub(since))
		}
	}
	r.delMu.Unlock()
	return fmt.Sprintf("first call %s, first Success %s, DELETED %s (median/max)", medMax(calls), medMax(successes), medMax(deletions))
}

func medMax(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	slices.Sort(ds)
	return fmt.Sprintf("%s/%s", ds[len(ds)/2].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond))
}

// edit changes things mid-teardown: the labels of some objects (so they no
// longer match), the policy's selector (narrowed) and its steps (renamed,
// one added).
func (r *chaosRun) edit(t *testing.T, rng *rand.Rand, pol *teardownv1alpha1.TeardownPolicy, srv *cleanupServer) {
	ctx := context.Background()
	relabel := r.names[:0:0]
	for _, name := range r.names {
		if rng.Float64() < 0.10 {
			relabel = append(relabel, name)
		}
	}
	patch := []byte(`{"metadata":{"labels":{"chaos":"no"}}}`)
	var failed atomic.Int64
	parallel(16, len(relabel), func(i int) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: relabel[i]}}
		if err := k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			failed.Add(1)
		}
	})
	r.logEvent("relabelled %d Terminating objects so they no longer match (%d patches failed)", len(relabel), failed.Load())

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return err
		}
		got.Spec.Targets[0].Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"c"}}}
		return k8s.Update(ctx, got)
	})
	if err != nil {
		t.Errorf("narrowing the policy's selector: %v", err)
	}
	r.logEvent("narrowed the policy's selector to tier notin (c)")
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return err
		}
		got.Spec.Steps = []teardownv1alpha1.Step{srv.step("cleanup-v2"), srv.step("audit")}
		return k8s.Update(ctx, got)
	})
	if err != nil {
		t.Errorf("editing the policy's steps: %v", err)
	}
	r.logEvent("edited the policy's steps: [cleanup] -> [cleanup-v2 audit]")
}

// leaderElection replaces the single controller by two replicas with leader
// election, kills the leader, waits for the other to take over, and goes
// back to the single controller.
func (r *chaosRun) leaderElection(t *testing.T, rng *rand.Rand, a *procctl.Controller, kill func(*procctl.Controller), startC func(*procctl.Controller)) {
	kill(a)
	r.logEvent("SIGKILL controller (kill %d); starting two replicas with leader election", r.kills.Load())
	replicas := []*procctl.Controller{newController(t, "replica-1", r.ns), newController(t, "replica-2", r.ns)}
	r.controllers = append(r.controllers, replicas...)
	for _, c := range replicas {
		startC(c)
	}
	leader, err := procctl.WaitLeader(context.Background(), 60*time.Second, replicas...)
	if err != nil {
		t.Errorf("%v\n%s\n%s", err, replicas[0].LogTail(20), replicas[1].LogTail(20))
		return
	}
	r.logEvent("%s is the leader", leader.Name())
	time.Sleep(time.Second + time.Duration(rng.Int63n(int64(2*time.Second))))
	other := replicas[0]
	if other == leader {
		other = replicas[1]
	}
	kill(leader)
	killed := time.Now()
	r.logEvent("SIGKILL the leader %s (kill %d)", leader.Name(), r.kills.Load())
	if _, err := procctl.WaitLeader(context.Background(), 60*time.Second, other); err != nil {
		t.Errorf("%v\n%s", err, other.LogTail(20))
	} else {
		r.failover = time.Since(killed)
		r.logEvent("%s took over %s after the leader was killed", other.Name(), r.failover.Round(10*time.Millisecond))
	}
	time.Sleep(time.Second + time.Duration(rng.Int63n(int64(2*time.Second))))
	kill(other)
	r.logEvent("SIGKILL %s (kill %d); back to the single controller", other.Name(), r.kills.Load())
	startC(a)
}

// leftovers describes the objects still there.
func (r *chaosRun) leftovers() []string {
	list, err := cs.CoreV1().ConfigMaps(r.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, cm := range list.Items {
		if cm.DeletionTimestamp == nil && !strings.HasPrefix(cm.Name, "cm-") {
			continue
		}
		out = append(out, fmt.Sprintf("  %s labels=%v finalizers=%v annotations=%v", cm.Name, cm.Labels, cm.Finalizers, cm.Annotations))
	}
	return out
}

// evidence greps the controller's log for the first objects of early.
func evidence(controllers []*procctl.Controller, early []string) string {
	var out []string
	for _, e := range first(early, 3) {
		name := strings.TrimSuffix(strings.Fields(e)[0], ":")
		for _, c := range controllers {
			for _, l := range c.Grep(`"`+name+`"`, 8) {
				out = append(out, c.Name()+": "+l)
			}
		}
	}
	return strings.Join(out, "\n")
}

func first(list []string, n int) []string {
	if len(list) > n {
		return list[:n]
	}
	return list
}

// parallel runs fn(0..n-1) on workers goroutines.
func parallel(workers, n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
