/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// bigObjects is how many large ConfigMaps the wait steps below read, each
// of bigObjectSize bytes of data: 21 MiB in all.
const (
	bigObjects    = 24
	bigObjectSize = 900 << 10
)

// makeBigConfigMaps creates bigObjects ConfigMaps labelled role=big in ns.
func makeBigConfigMaps(t testing.TB, ns string) []*corev1.ConfigMap {
	t.Helper()
	blob := strings.Repeat("x", bigObjectSize)
	var out []*corev1.ConfigMap
	for i := range bigObjects {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i), Namespace: ns, Labels: map[string]string{"role": "big"}},
			Data:       map[string]string{"blob": blob, "state": "busy"},
		}
		create(t, cm)
		out = append(out, cm)
	}
	return out
}

// waitPolicy is a TeardownPolicy on ConfigMaps labelled app=waiter whose one
// step waits on the role=big ConfigMaps until condition holds.
func waitPolicy(ns, condition string) *teardownv1alpha1.TeardownPolicy {
	return &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "big-wait", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "waiter")}},
			Steps: []teardownv1alpha1.Step{{Name: "big-done", Wait: &teardownv1alpha1.WaitAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("role", "big")}},
				Condition: condition,
			}}},
		},
	}
}

// TestWaitStepMemoryIsBounded: 32 targets wait on the same 24 ConfigMaps of
// 900 KiB each (21 MiB), with a condition that reads one label. The
// controller (in this process) grows its heap by far less than one copy of
// those objects per waiting target would take: it reads their metadata
// only, and once for targets waiting at the same time. The control: the
// step still decides on what it reads, as the targets go once the label
// says so. On the code before issue 27 (9ab3dd1) the heap grew by 1,327 MiB.
func TestWaitStepMemoryIsBounded(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	big := makeBigConfigMaps(t, ns)
	pol := waitPolicy(ns, "objects.all(o, 'done' in o.metadata.labels)")
	create(t, pol)
	mustBeReady(t, pol)
	targets, grew := peakWhileWaiting(t, ns, 32, "waiting until")
	t.Logf("heap in use grew by %d MiB at most while %d targets waited on %d objects of %d KiB (%d MiB in all)",
		grew>>20, len(targets), bigObjects, bigObjectSize>>10, bigObjects*bigObjectSize>>20)
	// Four times the objects read once: the heap in use of this process also
	// holds what the suite's other tests left to collect (55 MiB seen here
	// under load); the unbounded read grew it by 1,327 MiB.
	if limit := int64(bigObjects*bigObjectSize) * 4; grew > limit {
		t.Errorf("the heap grew by %d MiB while the targets waited, over %d MiB (four times the objects read once)", grew>>20, limit>>20)
	}

	// The control: the condition is decided on what was read.
	for _, cm := range big {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"done":"yes"}}}`))
		if err := k8s.Patch(context.Background(), cm, patch); err != nil {
			t.Fatal(err)
		}
	}
	for _, cm := range targets {
		testenv.Eventually(t, 60*time.Second, cm.Name+" to be gone", testenv.Gone(k8s, cm))
	}
}

// BenchmarkWaitStepPeakMemory reports how much the controller's heap grows
// at most while 32 targets wait on 24 ConfigMaps of 900 KiB, for a
// condition that reads metadata, and for the largest a tenant can write:
// one that reads the objects' whole data (stopped at its 4 MiB bound).
func BenchmarkWaitStepPeakMemory(b *testing.B) {
	for name, tc := range map[string]struct{ condition, progress string }{
		"metadata":   {"objects.all(o, 'done' in o.metadata.labels)", "waiting until"},
		"whole-data": {"objects.all(o, size(o.data) == 0)", "more than 4 MiB"},
	} {
		b.Run(name, func(b *testing.B) {
			var worst int64
			for range b.N {
				ns := testenv.NewNamespace(b, k8s)
				makeBigConfigMaps(b, ns)
				pol := waitPolicy(ns, tc.condition)
				create(b, pol)
				mustBeReady(b, pol)
				_, grew := peakWhileWaiting(b, ns, 32, tc.progress)
				worst = max(worst, grew)
			}
			b.ReportMetric(float64(worst)/(1<<20), "peak-heap-MiB")
		})
	}
}

// peakWhileWaiting creates n targets in ns for waitPolicy, deletes them,
// and returns them with how much the heap in use grew at most until each
// one's progress says progress.
func peakWhileWaiting(t testing.TB, ns string, n int, progress string) ([]*corev1.ConfigMap, int64) {
	t.Helper()
	var targets []*corev1.ConfigMap
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("waiter-%d", i), Namespace: ns, Labels: map[string]string{"app": "waiter"}}}
		create(t, cm)
		targets = append(targets, cm)
	}
	for _, cm := range targets {
		testenv.Eventually(t, 30*time.Second, "the key on "+cm.Name, func(ctx context.Context) (bool, error) {
			var got corev1.ConfigMap
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
				return false, err
			}
			return len(got.Finalizers) > 0, nil
		})
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	for _, cm := range targets {
		del(t, cm)
	}
	for _, cm := range targets {
		testenv.Eventually(t, 60*time.Second, cm.Name+" to say "+progress, progressSays(cm, progress))
	}
	close(stop)
	<-sampled
	return targets, int64(peak.Load()) - int64(before.HeapInuse)
}

// progressSays holds once a progress record on obj contains text.
func progressSays(obj *corev1.ConfigMap, text string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		var got corev1.ConfigMap
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), &got); err != nil {
			return false, err
		}
		for k, v := range got.Annotations {
			if strings.HasPrefix(k, finalizer.ProgressAnnotationPrefix) && strings.Contains(v, text) {
				return true, nil
			}
		}
		return false, nil
	}
}

// TestWaitStepOverItsBoundSaysSo: a condition that reads the whole data of
// 21 MiB of ConfigMaps is past what a step may keep (4 MiB): the target
// stays, and its progress says why and what to change.
func TestWaitStepOverItsBoundSaysSo(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	makeBigConfigMaps(t, ns)
	pol := waitPolicy(ns, "objects.all(o, size(o.data) == 0)")
	create(t, pol)
	mustBeReady(t, pol)
	target := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "waiter", Namespace: ns, Labels: map[string]string{"app": "waiter"}}}
	create(t, target)
	testenv.Eventually(t, 30*time.Second, "the key on the target", func(ctx context.Context) (bool, error) {
		var got corev1.ConfigMap
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(target), &got); err != nil {
			return false, err
		}
		return len(got.Finalizers) > 0, nil
	})
	del(t, target)
	testenv.Eventually(t, 60*time.Second, "the target's progress to say the step reads too much",
		progressSays(target, "more than 4 MiB of the fields its condition reads"))
	if ok, err := testenv.Gone(k8s, target)(context.Background()); err != nil || ok {
		t.Errorf("the target went (%v): a step over its bound must hold it", err)
	}
}
