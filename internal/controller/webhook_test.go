/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestDeclaredServiceFinalizerRunsWebhook: a Service whose manifest declares
// my.custom/finalizer, and a Declared policy for that key. Deleting the
// Service calls the webhook with the Service's identity, then the Service is
// gone.
func TestDeclaredServiceFinalizerRunsWebhook(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	srv := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	})
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-records", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: "my.custom/finalizer",
			Attach:    teardownv1alpha1.AttachDeclared,
			Targets:   []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Service", Selector: selector("app", "shop")}},
			Steps:     []teardownv1alpha1.Step{srv.webhookStep("remove-dns")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "shop"},
			Finalizers: []string{"my.custom/finalizer"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	create(t, svc)
	// Declared: the controller adds nothing to an unmarked Service.
	plain := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns, Labels: map[string]string{"app": "shop"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	create(t, plain)

	del(t, svc)
	testenv.Eventually(t, 20*time.Second, "the Service to be gone", testenv.Gone(k8s, svc))
	calls := srv.calls()
	if len(calls) != 1 {
		t.Fatalf("webhook called %d times, want 1", len(calls))
	}
	want := steps.WebhookObject{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: "web", UID: string(svc.UID),
		Labels: map[string]string{"app": "shop"}}
	got := calls[0].Object
	got.DeletionTimestamp, got.Annotations = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("webhook saw the object as (-want +got):\n%s", diff)
	}
	if calls[0].Step != "remove-dns" || calls[0].Finalizer != "my.custom/finalizer" || calls[0].Policy.Name != "dns-records" {
		t.Errorf("webhook request context = %+v", calls[0])
	}
	del(t, plain)
	testenv.Eventually(t, 10*time.Second, "the unmarked Service to go at once", testenv.Gone(k8s, plain))
	if n := len(srv.calls()); n != 1 {
		t.Errorf("webhook called %d times after deleting an unmarked Service, want still 1", n)
	}
}

// TestWebhookRetriedUntilSuccess: the external system fails its first
// answers, then asks to come back later (429 with Retry-After), then
// succeeds. The object stays until success, and the external record is
// removed exactly once in effect.
func TestWebhookRetriedUntilSuccess(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	var mu sync.Mutex
	records := map[string]bool{} // the external system's state
	removals := 0
	var throttledAt time.Time
	var afterThrottle time.Duration
	failing, failures := true, 0
	srv := newCleanupServer(t, func(n int, req steps.WebhookRequest, w http.ResponseWriter) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case failing:
			failures++
			answerJSON(w, http.StatusInternalServerError, steps.WebhookResponse{Status: steps.WebhookFailure, Message: "database unavailable"})
		case throttledAt.IsZero():
			throttledAt = time.Now()
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			if afterThrottle == 0 {
				afterThrottle = time.Since(throttledAt)
			}
			if records[req.Object.UID] {
				delete(records, req.Object.UID)
				removals++
			}
			answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
		}
	})
	pol, cm := guardedBucket(t, ns, "external", srv)
	mu.Lock()
	records[string(cm.UID)] = true
	mu.Unlock()

	del(t, cm)
	testenv.Eventually(t, 10*time.Second, "three failed attempts", func(context.Context) (bool, error) { return len(srv.calls()) >= 3, nil })
	held := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), held); err != nil {
		t.Fatalf("object gone while the webhook was failing: %v", err)
	}
	// The policy's status says what failed, on which object and step.
	testenv.Eventually(t, 20*time.Second, "the failure in the policy's status", func(ctx context.Context) (bool, error) {
		got := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		f := got.Status.RecentFailures
		return got.Status.Blocked == 1 && len(f) == 1 && f[0].Object.Name == "bucket" && f[0].Step == "remove-record" &&
			f[0].Reason == teardownv1alpha1.StepFailedReason && strings.Contains(f[0].Message, "database unavailable"), nil
	})
	mu.Lock()
	failing = false
	mu.Unlock()
	testenv.Eventually(t, 60*time.Second, "the object to be gone after success", testenv.Gone(k8s, cm))
	mu.Lock()
	defer mu.Unlock()
	if failures < 3 {
		t.Errorf("webhook failed %d times, want at least 3 retries", failures)
	}
	if removals != 1 || len(records) != 0 {
		t.Errorf("external record removed %d times (records left %v), want exactly once", removals, records)
	}
	if afterThrottle < 1500*time.Millisecond {
		t.Errorf("called again %s after a 429 with Retry-After: 2", afterThrottle)
	}
}

// TestFailingReceiverIsBackedOff: a receiver that fails every call at once
// is called again with backoff (from 5 ms, doubling, docs/controller.md),
// not as fast as the controller can go: webhook calls run off the workers,
// and the run that starts a call succeeds, which reset the work queue's
// backoff, so such a receiver was called (and its object patched, and an
// Event written) tens of times a second, for as long as the object stayed,
// by every tenant who wanted to.
func TestFailingReceiverIsBackedOff(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	srv := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		answerJSON(w, http.StatusInternalServerError, steps.WebhookResponse{Status: steps.WebhookFailure, Message: "database unavailable"})
	})
	pol, cm := guardedBucket(t, ns, "failing", srv)
	del(t, cm)
	testenv.Eventually(t, 20*time.Second, "the first call", func(context.Context) (bool, error) { return len(srv.calls()) >= 1, nil })
	const window = 6 * time.Second
	time.Sleep(window)
	// 5 ms doubling: ten calls within the first 5.1 s, the eleventh at
	// 10.2 s. Without the backoff: hundreds.
	n := len(srv.calls())
	t.Logf("the failing receiver was called %d times in %s after its first call", n, window)
	if n < 4 || n > 14 {
		t.Errorf("the failing receiver was called %d times in %s after its first call, want 4 to 14 (backoff from 5 ms, doubling)", n, window)
	}
	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatalf("the object went while its cleanup failed: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, "the failure said in the policy's status", func(ctx context.Context) (bool, error) {
		status, _, err := statusOf(ctx, pol)
		return err == nil && len(status.RecentFailures) == 1 && strings.Contains(status.RecentFailures[0].Message, "database unavailable"), err
	})
}

// guardedBucket serves TeardownPolicy name of ns, whose one step
// remove-record calls srv, and creates the ConfigMap bucket it guards.
func guardedBucket(t *testing.T, ns, name string, srv *cleanupServer) (*teardownv1alpha1.TeardownPolicy, *corev1.ConfigMap) {
	t.Helper()
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("external", "record")}},
			Steps:   []teardownv1alpha1.Step{srv.webhookStep("remove-record")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/" + name
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bucket", Namespace: ns, Labels: map[string]string{"external": "record"}}}
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "the derived finalizer "+key, hasFinalizer(cm, key))
	return pol, cm
}
