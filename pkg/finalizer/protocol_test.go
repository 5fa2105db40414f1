/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// counter counts handler calls per object.
type counter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *counter) inc(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[name]++
	return c.calls[name]
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[name]
}

// TestTwoControllersRacing runs two controllers with two finalizers on the
// same objects at once. Neither clobbers the other's key when adding, both
// cleanups run, and every object goes away.
func TestTwoControllersRacing(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	const objects = 20
	const keyA, keyB = "a.example.com/cleanup", "b.example.com/cleanup"
	var ranA, ranB counter
	startController(t, ns, func(f *finalizer.Finalizers) error {
		return f.Register(keyA, finalizer.HandlerFunc(func(_ context.Context, obj client.Object) finalizer.Result {
			ranA.inc(obj.GetName())
			return finalizer.Done()
		}))
	})
	startController(t, ns, func(f *finalizer.Finalizers) error {
		return f.Register(keyB, finalizer.HandlerFunc(func(_ context.Context, obj client.Object) finalizer.Result {
			ranB.inc(obj.GetName())
			return finalizer.Done()
		}))
	})
	var cms []*corev1.ConfigMap
	for i := range objects {
		// Some objects start with a third party's finalizer, so both
		// controllers append to an existing list.
		var initial []string
		if i%2 == 0 {
			initial = []string{"third.example.com/hold"}
		}
		cms = append(cms, guarded(t, ns, fmt.Sprintf("cm-%d", i), initial...))
	}
	for _, cm := range cms {
		testenv.Eventually(t, 30*time.Second, "both finalizers on "+cm.Name, hasFinalizers(cm, keyA, keyB))
	}
	for i, cm := range cms {
		deleteObject(t, cm)
		if i%2 == 0 {
			// Both controllers must finish while the third party still holds it.
			testenv.Eventually(t, 30*time.Second, "both cleanups on "+cm.Name, func(ctx context.Context) (bool, error) {
				got := &corev1.ConfigMap{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
					return false, err
				}
				return slices.Equal(got.Finalizers, []string{"third.example.com/hold"}), nil
			})
			rm := []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`)
			if err := k8s.Patch(t.Context(), cm, client.RawPatch(types.JSONPatchType, rm)); err != nil {
				t.Fatalf("removing the third party's finalizer: %v", err)
			}
		}
	}
	for _, cm := range cms {
		testenv.Eventually(t, 30*time.Second, cm.Name+" gone", testenv.Gone(k8s, cm))
		if ranA.get(cm.Name) < 1 || ranB.get(cm.Name) < 1 {
			t.Errorf("%s: cleanup A ran %d times, B %d times; want both at least once", cm.Name, ranA.get(cm.Name), ranB.get(cm.Name))
		}
	}
}

// TestStaleCopyNeverReaddsRemovedFinalizer drives the library with copies that
// are out of date, as a cache's can be, and checks that no write from a stale
// copy brings back a removed finalizer or drops a concurrent one.
func TestStaleCopyNeverReaddsRemovedFinalizer(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	ns := testenv.NewNamespace(t, k8s)
	c := finalizer.ForClient(k8s, nil)
	const keyA, keyB = "a.example.com/cleanup", "b.example.com/cleanup"
	done := func(context.Context, client.Object) finalizer.Result { return finalizer.Done() }
	a, b := finalizer.New(c), finalizer.New(c)
	if err := a.Register(keyA, finalizer.HandlerFunc(done)); err != nil {
		t.Fatal(err)
	}
	if err := b.Register(keyB, finalizer.HandlerFunc(done)); err != nil {
		t.Fatal(err)
	}

	// Adding from a copy that predates the other controller's add.
	cm := configMap(t, ns, "stale")
	stale := cm.DeepCopy()
	if _, err := a.Reconcile(ctx, cm); err != nil {
		t.Fatalf("A adds: %v", err)
	}
	if _, err := b.Reconcile(ctx, stale); err != nil {
		t.Fatalf("B adds from a stale copy: %v", err)
	}
	got := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if want := []string{keyA, keyB}; !slices.Equal(got.Finalizers, want) {
		t.Fatalf("after both adds finalizers = %v, want %v", got.Finalizers, want)
	}

	// Removing from a copy that predates the other controller's removal.
	got.Finalizers = append(got.Finalizers, "third.example.com/hold")
	if err := k8s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	deleteObject(t, got)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	staleDeleting := got.DeepCopy()
	if _, err := a.Reconcile(ctx, got.DeepCopy()); err != nil {
		t.Fatalf("A finalizes: %v", err)
	}
	if _, err := b.Reconcile(ctx, staleDeleting); err != nil {
		t.Fatalf("B finalizes from a stale copy: %v", err)
	}
	// A stale copy handed to A again must not re-add or re-remove anything.
	if _, err := a.Reconcile(ctx, got.DeepCopy()); err != nil {
		t.Fatalf("A again from a stale copy: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"third.example.com/hold"}; !slices.Equal(got.Finalizers, want) {
		t.Errorf("after both removals finalizers = %v, want %v", got.Finalizers, want)
	}
}

// TestDeadlineRelease: a cleanup that never finishes is released when its
// deadline passes, and what was skipped is recorded on the object and in an
// Event.
func TestDeadlineRelease(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	const key = "deadline.example.com/release"
	var calls atomic.Int32
	before := metricValue(t, "teardown_finalizer_releases_total", map[string]string{"finalizer": key, "cause": "deadline"})
	startController(t, ns, func(f *finalizer.Finalizers) error {
		return f.Register(key, finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result {
			calls.Add(1)
			return finalizer.Pending(500*time.Millisecond, "waiting for the backend to drain")
		}), finalizer.WithDeadline(2*time.Second, finalizer.ExpiryRelease))
	})
	// A third party's finalizer keeps the object visible after the release.
	cm := guarded(t, ns, "slow", "third.example.com/hold")
	testenv.Eventually(t, 20*time.Second, "finalizer added", hasFinalizers(cm, key))
	deleteObject(t, cm)
	testenv.Eventually(t, 20*time.Second, "finalizer released", func(ctx context.Context) (bool, error) {
		ok, err := hasFinalizers(cm, key)(ctx)
		return !ok, err
	})
	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if calls.Load() == 0 {
		t.Error("the handler never ran before the deadline")
	}
	progress := finalizer.ReadProgress(got)
	if len(progress) != 1 || progress[0].State != finalizer.StateRelease || !progress[0].DeadlineExceeded ||
		!strings.Contains(progress[0].Message, "waiting for the backend to drain") {
		t.Errorf("progress record = %+v, want a Release past the deadline naming the skipped cleanup", progress)
	}
	if age := time.Since(got.DeletionTimestamp.Time); age < 2*time.Second {
		t.Errorf("released %s after deletion, before the 2s deadline", age)
	}
	note := waitForEvent(t, ns, cm.Name, finalizer.ReasonFinalizerReleased)
	if !strings.Contains(note, "deadline 2s exceeded") || !strings.Contains(note, "skipped cleanup") {
		t.Errorf("release Event says %q, want the deadline and the skipped cleanup", note)
	}
	if after := metricValue(t, "teardown_finalizer_releases_total", map[string]string{"finalizer": key, "cause": "deadline"}); after != before+1 {
		t.Errorf("releases_total{cause=deadline} went from %v to %v, want +1", before, after)
	}
}

// TestDeadlineBlock: with Block (the default), a passed deadline keeps the
// object and says so; the finalizer goes only when the cleanup is done.
func TestDeadlineBlock(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	const key = "deadline.example.com/block"
	var finish atomic.Bool
	startController(t, ns, func(f *finalizer.Finalizers) error {
		return f.Register(key, finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result {
			if finish.Load() {
				return finalizer.Done()
			}
			return finalizer.Pending(300*time.Millisecond, "still draining")
		}), finalizer.WithDeadline(time.Second, finalizer.ExpiryBlock))
	})
	cm := guarded(t, ns, "blocked")
	testenv.Eventually(t, 20*time.Second, "finalizer added", hasFinalizers(cm, key))
	deleteObject(t, cm)
	waitForEvent(t, ns, cm.Name, finalizer.ReasonDeadlineExceeded)
	time.Sleep(time.Second) // well past the deadline
	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatalf("object gone past a Block deadline: %v", err)
	}
	if !slices.Contains(got.Finalizers, key) {
		t.Fatalf("finalizer removed past a Block deadline: %v", got.Finalizers)
	}
	progress := finalizer.ReadProgress(got)
	if len(progress) != 1 || !progress[0].DeadlineExceeded || progress[0].State != finalizer.StatePending {
		t.Errorf("progress record = %+v, want Pending with the deadline exceeded", progress)
	}
	finish.Store(true)
	testenv.Eventually(t, 20*time.Second, "object gone once the cleanup is done", testenv.Gone(k8s, cm))
}

// TestForegroundDeletionWaitsForDependentCleanup deletes an owner with
// Foreground propagation through kube-controller-manager's garbage
// collector. Its dependent is held by a library finalizer: the owner stays
// until the dependent's cleanup is done.
func TestForegroundDeletionWaitsForDependentCleanup(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	ns := testenv.NewNamespace(t, k8s)
	const key = "gc.example.com/cleanup"
	var finish atomic.Bool
	var doneAt atomic.Int64
	var pendingCalls atomic.Int32
	startController(t, ns, func(f *finalizer.Finalizers) error {
		return f.Register(key, finalizer.HandlerFunc(func(_ context.Context, obj client.Object) finalizer.Result {
			if !finish.Load() {
				pendingCalls.Add(1)
				return finalizer.Pending(200*time.Millisecond, "dependent cleanup running")
			}
			doneAt.Store(time.Now().UnixNano())
			return finalizer.Done()
		}))
	})
	owner := configMap(t, ns, "owner")
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent", Namespace: ns, Labels: map[string]string{guardLabel: "true"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true),
		}},
	}}
	if err := k8s.Create(ctx, dependent); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "dependent guarded", hasFinalizers(dependent, key))

	deleteObject(t, owner, client.PropagationPolicy(metav1.DeletePropagationForeground))
	testenv.Eventually(t, 30*time.Second, "the garbage collector to delete the dependent", func(ctx context.Context) (bool, error) {
		got := &corev1.ConfigMap{}
		err := k8s.Get(ctx, client.ObjectKeyFromObject(dependent), got)
		return err == nil && got.DeletionTimestamp != nil && pendingCalls.Load() > 0, err
	})
	time.Sleep(time.Second)
	got := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(owner), got); err != nil {
		t.Fatalf("owner gone while its dependent's cleanup is pending: %v", err)
	}
	if !slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Errorf("owner finalizers = %v, want %s", got.Finalizers, metav1.FinalizerDeleteDependents)
	}
	finish.Store(true)
	testenv.Eventually(t, 30*time.Second, "the owner to be gone", testenv.Gone(k8s, owner))
	ownerGoneAt := time.Now().UnixNano()
	if doneAt.Load() == 0 || doneAt.Load() > ownerGoneAt {
		t.Errorf("owner went away before the dependent's cleanup reported done")
	}
}

// TestDeletedBeforeGuarded: an object deleted before the finalizer was added
// never gets its handler called, and this is reported.
func TestDeletedBeforeGuarded(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	const key = "late.example.com/cleanup"
	before := metricValue(t, "teardown_finalizer_unguarded_deletions_total", map[string]string{"finalizer": key})
	// Someone else's finalizer keeps it visible, Terminating, without ours.
	cm := guarded(t, ns, "early-delete", "third.example.com/hold")
	deleteObject(t, cm)
	var calls atomic.Int32
	startController(t, ns, func(f *finalizer.Finalizers) error {
		return f.Register(key, finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result {
			calls.Add(1)
			return finalizer.Done()
		}))
	})
	note := waitForEvent(t, ns, cm.Name, finalizer.ReasonDeletedBeforeGuarded)
	if !strings.Contains(note, key) {
		t.Errorf("Event says %q, want it to name %s", note, key)
	}
	if calls.Load() != 0 {
		t.Errorf("handler ran %d times for an object it never guarded", calls.Load())
	}
	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"third.example.com/hold"}; !slices.Equal(got.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v", got.Finalizers, want)
	}
	if after := metricValue(t, "teardown_finalizer_unguarded_deletions_total", map[string]string{"finalizer": key}); after != before+1 {
		t.Errorf("unguarded_deletions_total went from %v to %v, want +1 (once per object)", before, after)
	}
}

// metricValue reads a counter or gauge from controller-runtime's registry.
func metricValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
