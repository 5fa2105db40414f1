/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// noReleaseEvent fails if obj got a FinalizerReleased Event.
func noReleaseEvent(t *testing.T, ns, name string) {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == finalizer.ReasonFinalizerReleased {
			t.Errorf("%s was released without its cleanup: %s", name, e.Note)
		}
	}
}

// TestTransientErrorsNeverRelease: under onFailure: Release, a webhook
// that refuses connections, then answers 503 without Retry-After and 500,
// has not failed the cleanup: the object stays until the webhook answers
// Success, and is never released.
func TestTransientErrorsNeverRelease(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	var mu sync.Mutex
	var answers []int // HTTP codes to answer next, then Success
	succeeded := false
	srv := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		mu.Lock()
		defer mu.Unlock()
		if len(answers) > 0 {
			code := answers[0]
			answers = answers[1:]
			answerJSON(w, code, steps.WebhookResponse{Status: steps.WebhookFailure, Message: "backend restarting"})
			return
		}
		succeeded = true
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	})
	step := srv.webhookStep("deregister")
	step.OnFailure = teardownv1alpha1.FailureRelease
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "fragile", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "fragile")}},
			Steps:   []teardownv1alpha1.Step{step},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/fragile"
	cm := labelled(ns, "cm", "app", "fragile")
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(cm, key))

	// The receiver goes away: connections are refused.
	addr := srv.Listener.Addr().String()
	srv.Listener.Close()
	srv.CloseClientConnections()
	del(t, cm)
	stillGuarded(t, cm, key, "while its webhook refused connections")

	// It comes back answering 503 without Retry-After, then 500, then
	// Success.
	mu.Lock()
	answers = []int{http.StatusServiceUnavailable, http.StatusInternalServerError}
	mu.Unlock()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", addr, err)
	}
	srv.Listener = tls.NewListener(l, srv.TLS)
	go func() { _ = srv.Config.Serve(srv.Listener) }()
	testenv.Eventually(t, 60*time.Second, "the object to go after the webhook's Success", testenv.Gone(k8s, cm))
	mu.Lock()
	defer mu.Unlock()
	if !succeeded || len(answers) != 0 {
		t.Errorf("object went with succeeded=%v and %d error answers not yet given", succeeded, len(answers))
	}
	noReleaseEvent(t, ns, cm.Name)
}

// TestStepEditsNeverSkipAStep: progress is bound to the version of the
// steps. An object waiting at step c of [a, b, c] is not released when the
// steps become [a, c] (c never succeeded), nor when its step record is
// forged ({"step":99}) or garbled ({"step":-1}): each restarts from the
// first step, and the object goes only once c answered Success.
func TestStepEditsNeverSkipAStep(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	var mu sync.Mutex
	cOpen := false
	calls := map[string]int{}
	var cSuccessAt time.Time
	srv := newCleanupServer(t, func(_ int, req steps.WebhookRequest, w http.ResponseWriter) {
		mu.Lock()
		defer mu.Unlock()
		calls[req.Step]++
		if req.Step == "c" && !cOpen {
			answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookInProgress, Message: "c is working", RetryAfterSeconds: 1})
			return
		}
		if req.Step == "c" && cSuccessAt.IsZero() {
			cSuccessAt = time.Now()
		}
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	})
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "ordered", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "ordered")}},
			Steps:   []teardownv1alpha1.Step{srv.webhookStep("a"), srv.webhookStep("b"), srv.webhookStep("c")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/ordered"
	cm := labelled(ns, "cm", "app", "ordered")
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(cm, key))
	del(t, cm)
	testenv.Eventually(t, 20*time.Second, "the cleanup to wait at step c", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return calls["c"] > 0, nil
	})

	// Edit [a, b, c] to [a, c]: the recorded position no longer belongs to
	// these steps; it restarts at a, and waits at c again. a's calls are
	// counted before the edit: the new version may call it before the
	// edit's Ready condition is seen.
	mu.Lock()
	aBefore := calls["a"]
	mu.Unlock()
	editPolicy(t, pol, func(s *teardownv1alpha1.TeardownPolicySpec) {
		s.Steps = []teardownv1alpha1.Step{s.Steps[0], s.Steps[2]}
	})
	testenv.Eventually(t, 20*time.Second, "step a to run again under the edited steps", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return calls["a"] > aBefore, nil
	})
	stillGuarded(t, cm, key, "when the steps were edited while it waited at c")

	// Forged and garbled step records restart from the first step too.
	for _, record := range []string{`{"step":99}`, `{"step":-1}`, `not json`} {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, steps.StateAnnotation(key), record)
		if err := k8s.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		stillGuarded(t, cm, key, "with step record "+record)
	}

	mu.Lock()
	cOpen = true
	mu.Unlock()
	testenv.Eventually(t, 30*time.Second, "the object to go once c succeeded", testenv.Gone(k8s, cm))
	mu.Lock()
	defer mu.Unlock()
	if cSuccessAt.IsZero() {
		t.Error("the object went without step c ever answering Success")
	}
	noReleaseEvent(t, ns, cm.Name)
	// The controller kept working through the garbage: its status still
	// refreshes.
	got := &teardownv1alpha1.TeardownPolicy{}
	testenv.Eventually(t, 20*time.Second, "the policy's counts to refresh", func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		return got.Status.Terminating == 0 && got.Status.Guarded == 0, nil
	})
}
