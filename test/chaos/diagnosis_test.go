/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/bench/apimetrics"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// TestDiagnosisSurvivesRestart: a controller diagnoses a stuck teardown
// (status.blockedObjects[].diagnosis, one TerminationBlocked Event) and is
// killed; the next one, which knows nothing of it in memory, finds the same
// cause. It must read that from the policy's status: the diagnosis keeps
// its since, and no second Event lands on the object.
func TestDiagnosisSurvivesRestart(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	port, err := procctl.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := startController(t, "diagnosis", "--diagnose-after=1s", "--diagnose-interval=2s",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false")

	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns,
		Labels: map[string]string{"leftover": "true"}, Finalizers: []string{"example.com/never"}}}
	if err := k8s.Create(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	pol := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "leftovers", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"guard": "true"}}}},
			Steps: []teardownv1alpha1.Step{{Name: "delete-leftovers", Delete: &teardownv1alpha1.DeleteAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap",
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"leftover": "true"}}}},
			}}},
		}}
	if err := k8s.Create(t.Context(), pol); err != nil {
		t.Fatal(err)
	}
	guarded := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns, Labels: map[string]string{"guard": "true"}}}
	if err := k8s.Create(t.Context(), guarded); err != nil {
		t.Fatal(err)
	}
	if !poll(30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		fins, _, err := finalizersOf(ctx, guarded)
		return len(fins) > 0, err
	}) {
		t.Fatal("the guarded ConfigMap got no finalizer")
	}
	if err := k8s.Delete(t.Context(), guarded); err != nil {
		t.Fatal(err)
	}

	first := diagnosisOf(t, pol, guarded)
	t.Logf("first controller: %s since %s: %s", first.Cause, first.Since.UTC().Format(time.RFC3339), first.Message)
	if n := blockedEvents(t, guarded); n != 1 {
		t.Fatalf("%d TerminationBlocked Events from the first controller, want 1", n)
	}

	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The new process has diagnosed the object once its metric counts it.
	if !poll(60*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		v, err := apimetrics.SumAt(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), "teardown_blocked_objects", map[string]string{"cause": first.Cause})
		return err == nil && v == 1, nil
	}) {
		t.Fatal("the restarted controller did not diagnose the object within 60s")
	}
	time.Sleep(3 * time.Second) // a status refresh and a further pass
	again := diagnosisOf(t, pol, guarded)
	if again.Cause != first.Cause || !again.Since.Equal(&first.Since) {
		t.Errorf("after the restart: %s since %s, want %s since %s (the same cause, found before)", again.Cause,
			again.Since.UTC().Format(time.RFC3339), first.Cause, first.Since.UTC().Format(time.RFC3339))
	}
	if n := blockedEvents(t, guarded); n != 1 {
		t.Errorf("%d TerminationBlocked Events after the restart, want still 1: the cause is not news", n)
	}

	unblock := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := k8s.Patch(t.Context(), held, unblock); err != nil {
		t.Fatal(err)
	}
	if !poll(30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, exists, err := finalizersOf(ctx, guarded)
		return !exists, err
	}) {
		t.Error("the guarded ConfigMap did not go once its leftover went")
	}
}

// diagnosisOf waits until pol's status carries a diagnosis of obj.
func diagnosisOf(t *testing.T, pol *teardownv1alpha1.TeardownPolicy, obj client.Object) teardownv1alpha1.Diagnosis {
	t.Helper()
	var d *teardownv1alpha1.Diagnosis
	if !poll(60*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		got := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		for _, b := range got.Status.BlockedObjects {
			if b.Object.Name == obj.GetName() && b.Diagnosis != nil {
				d = b.Diagnosis
				return true, nil
			}
		}
		return false, nil
	}) {
		t.Fatalf("no diagnosis of %s in the policy's status", obj.GetName())
	}
	return *d
}

// blockedEvents counts the TerminationBlocked Events on obj.
func blockedEvents(t *testing.T, obj client.Object) int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(t.Context(), list, client.InNamespace(obj.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Name == obj.GetName() && e.Reason == teardownv1alpha1.TerminationBlockedReason {
			n++
		}
	}
	return n
}
