/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestHostileWebhookHoldsNoWorker: tenant A's webhook accepts every call and
// never answers (until the test ends), on more objects than there are
// cleanup workers. Tenant B's teardown, timed alone first (the control),
// finishes beside it within a small factor of its time alone, and A never
// has more calls in flight than its share. On the code before issue 27
// (9ab3dd1) it fails: B's objects were not gone after 60 s.
func TestHostileWebhookHoldsNoWorker(t *testing.T) {
	testenv.SkipShort(t)
	// Tenant B: a webhook that answers at once.
	nsB := testenv.NewNamespace(t, k8s)
	fast := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	})
	polB := webhookPolicy(nsB, "tenant-b", fast.webhookStep("notify"))
	create(t, polB)
	mustBeReady(t, polB)

	// Tenant A: a webhook that holds every call, with a step timeout far
	// longer than the test.
	nsA := testenv.NewNamespace(t, k8s)
	var inFlight, most atomic.Int64
	stop := make(chan struct{})
	hostile := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, _ http.ResponseWriter) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-stop
	})
	t.Cleanup(func() { close(stop) }) // before the server closes (LIFO)
	step := hostile.webhookStep("hang")
	step.Webhook.Timeout = &metav1.Duration{Duration: 5 * time.Minute}
	polA := webhookPolicy(nsA, "tenant-a", step)
	create(t, polA)
	mustBeReady(t, polA)

	alone := tearDown(t, nsB, "alone", 10)
	aloneMedian, aloneMax := medianMax(alone)
	t.Logf("tenant B's teardown alone: median %s, max %s", aloneMedian, aloneMax)

	// A's teardowns: three times as many objects as cleanup workers.
	hostileObjects := 3 * 16
	objs := makeConfigMaps(t, nsA, "hostile", hostileObjects)
	for _, o := range objs {
		del(t, o)
	}
	testenv.Eventually(t, 30*time.Second, "tenant A's calls to fill its share", func(context.Context) (bool, error) {
		return inFlight.Load() >= int64(steps.DefaultWebhookCallsPerTenant), nil
	})

	beside := tearDown(t, nsB, "beside", 10)
	besideMedian, besideMax := medianMax(beside)
	t.Logf("tenant B's teardown beside tenant A's hanging webhook: median %s, max %s (alone: median %s, max %s); A's calls in flight at most %d",
		besideMedian, besideMax, aloneMedian, aloneMax, most.Load())
	if limit := max(5*aloneMax, aloneMax+5*time.Second); besideMax > limit {
		t.Errorf("tenant B's teardown took up to %s beside tenant A, over %s (alone: up to %s)", besideMax, limit, aloneMax)
	}
	if m := most.Load(); m > int64(steps.DefaultWebhookCallsPerTenant) {
		t.Errorf("tenant A had %d webhook calls in flight at once, over its share of %d", m, steps.DefaultWebhookCallsPerTenant)
	}
	// A's objects are still there, held, as they should be.
	for _, o := range objs[:1] {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), &corev1.ConfigMap{}); err != nil {
			t.Errorf("tenant A's %s: %v, want it held", o.Name, err)
		}
	}
}

// webhookPolicy is a TeardownPolicy guarding ConfigMaps labelled app=fair
// in ns with one step.
func webhookPolicy(ns, name string, step teardownv1alpha1.Step) *teardownv1alpha1.TeardownPolicy {
	return &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "fair")}},
			Steps:   []teardownv1alpha1.Step{step},
		},
	}
}

// makeConfigMaps creates n ConfigMaps labelled app=fair in ns and waits
// until each carries a finalizer.
func makeConfigMaps(t *testing.T, ns, prefix string, n int) []*corev1.ConfigMap {
	t.Helper()
	var out []*corev1.ConfigMap
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Namespace: ns, Labels: map[string]string{"app": "fair"}}}
		create(t, cm)
		out = append(out, cm)
	}
	for _, cm := range out {
		testenv.Eventually(t, 30*time.Second, "the key on "+cm.Name, func(c context.Context) (bool, error) {
			got := &corev1.ConfigMap{}
			if err := k8s.Get(c, client.ObjectKeyFromObject(cm), got); err != nil {
				return false, err
			}
			return len(got.Finalizers) > 0, nil
		})
	}
	return out
}

// tearDown creates n guarded ConfigMaps in ns, deletes them all, and
// returns how long each took from its deletion to being gone, sorted.
func tearDown(t *testing.T, ns, prefix string, n int) []time.Duration {
	t.Helper()
	objs := makeConfigMaps(t, ns, prefix, n)
	start := time.Now()
	for _, o := range objs {
		del(t, o)
	}
	var took []time.Duration
	remaining := objs
	for len(remaining) > 0 {
		if time.Since(start) > time.Minute {
			t.Fatalf("%d of tenant B's objects were not gone after a minute", len(remaining))
		}
		var still []*corev1.ConfigMap
		for _, o := range remaining {
			if gone, err := testenv.Gone(k8s, o)(context.Background()); err != nil || !gone {
				still = append(still, o)
				continue
			}
			took = append(took, time.Since(start))
		}
		remaining = still
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(took)
	return took
}

// medianMax is the median and the largest of sorted durations.
func medianMax(d []time.Duration) (time.Duration, time.Duration) {
	return d[len(d)/2], d[len(d)-1]
}

// TestPolicyBurstDelaysNoOtherTenant: tenant A keeps 150 TeardownPolicies
// that share one key of her own (one serves, the rest wait for it, and each
// is reconciled again at every status refresh). Tenant B's new policy is
// served within a small factor of its time alone (the control, timed
// first). On the code before issue 27 it fails: 9.2 s beside, 0.7 s alone.
func TestPolicyBurstDelaysNoOtherTenant(t *testing.T) {
	testenv.SkipShort(t)
	nsB := testenv.NewNamespace(t, k8s)
	servedIn := func(name string) time.Duration {
		t.Helper()
		pol := &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nsB},
			Spec: teardownv1alpha1.TeardownPolicySpec{
				Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", name)}},
				Steps:   []teardownv1alpha1.Step{{Name: "nothing", Wait: &teardownv1alpha1.WaitAction{Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret", Selector: selector("app", name)}}}}},
			},
		}
		start := time.Now()
		create(t, pol)
		testenv.Eventually(t, 5*time.Minute, name+" to be served", func(ctx context.Context) (bool, error) {
			var got teardownv1alpha1.TeardownPolicy
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), &got); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(got.Status.Conditions, teardownv1alpha1.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == got.Generation, nil
		})
		return time.Since(start)
	}
	alone := servedIn("alone")

	nsA := testenv.NewNamespace(t, k8s)
	const burst = 150
	for i := range burst {
		create(t, &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%d", i), Namespace: nsA},
			Spec: teardownv1alpha1.TeardownPolicySpec{
				Finalizer: "tenant-a.example.com/shared",
				Targets:   []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "burst")}},
				Steps:     []teardownv1alpha1.Step{{Name: "nothing", Wait: &teardownv1alpha1.WaitAction{Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret", Selector: selector("app", "burst")}}}}},
			},
		})
	}
	beside := servedIn("beside")
	t.Logf("tenant B's policy served in %s alone, %s beside tenant A's %d policies sharing one key", alone, beside, burst)
	if limit := max(5*alone, alone+3*time.Second); beside > limit {
		t.Errorf("tenant B's policy was served in %s beside tenant A's burst, over %s (alone: %s)", beside, limit, alone)
	}
}
