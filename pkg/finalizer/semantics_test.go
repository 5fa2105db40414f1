/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestAPIServerFinalizerSemantics pins down the ground truth the library is
// built on, against the real API server.
func TestAPIServerFinalizerSemantics(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	ns := testenv.NewNamespace(t, k8s)
	cm := configMap(t, ns, "held", "example.com/hold")

	// DELETE with a finalizer sets deletionTimestamp and keeps the object;
	// the answer is 200 with the object, not 202.
	result := cs.CoreV1().RESTClient().Delete().Namespace(ns).Resource("configmaps").Name(cm.Name).Do(ctx)
	var code int
	result.StatusCode(&code)
	if err := result.Error(); err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	if code != 200 {
		t.Errorf("DELETE of an object with a finalizer answered %d, want 200", code)
	}
	got := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatalf("object gone after DELETE with a finalizer: %v", err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set after DELETE")
	}

	// No finalizer can be added once the object is being deleted.
	add := []byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/late"}]`)
	err := k8s.Patch(ctx, got.DeepCopy(), client.RawPatch(types.JSONPatchType, add))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "no new finalizers can be added if the object is being deleted") {
		t.Errorf("adding a finalizer to a deleting object: got %v, want 422 no new finalizers", err)
	}

	// Other metadata can still change.
	ann := []byte(`{"metadata":{"annotations":{"note":"still writable"}}}`)
	if err := k8s.Patch(ctx, got.DeepCopy(), client.RawPatch(types.MergePatchType, ann)); err != nil {
		t.Errorf("annotating a deleting object: %v", err)
	}

	// Removing the last finalizer deletes the object.
	rm := []byte(`[{"op":"test","path":"/metadata/finalizers/0","value":"example.com/hold"},{"op":"remove","path":"/metadata/finalizers/0"}]`)
	if err := k8s.Patch(ctx, got, client.RawPatch(types.JSONPatchType, rm)); err != nil {
		t.Fatalf("removing the last finalizer: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, "the object to be gone", testenv.Gone(k8s, cm))
}

// TestGuardedPatchRefusedOnStaleList shows why every write is guarded: a test
// op against a stale list fails with 422 instead of clobbering.
func TestGuardedPatchRefusedOnStaleList(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	ns := testenv.NewNamespace(t, k8s)
	cm := configMap(t, ns, "stale", "example.com/a", "example.com/b")
	stale := cm.DeepCopy()
	rm := []byte(`[{"op":"test","path":"/metadata/finalizers/0","value":"example.com/a"},{"op":"remove","path":"/metadata/finalizers/0"}]`)
	if err := k8s.Patch(ctx, cm, client.RawPatch(types.JSONPatchType, rm)); err != nil {
		t.Fatalf("first removal: %v", err)
	}
	err := k8s.Patch(ctx, stale, client.RawPatch(types.JSONPatchType, rm))
	if !apierrors.IsInvalid(err) {
		t.Fatalf("stale guarded removal: got %v, want 422 Invalid", err)
	}
	got := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"example.com/b"}; !equal(got.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v", got.Finalizers, want)
	}
	_ = metav1.Now()
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
