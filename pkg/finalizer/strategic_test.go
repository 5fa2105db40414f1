/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestStrategicRemovalGuards: the removal from a built-in kind being
// deleted is a strategic merge patch (record.StrategicRemovalPatch); on the
// real API server its pins hold: a resourceVersion that is not the
// object's is a conflict, a UID that is not the object's is refused, and
// the library's removal from a stale copy reads again and removes only its
// key and its record, once, with the JSON patch after the refusal.
func TestStrategicRemovalGuards(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	ctx := t.Context()
	const key, hold = "shop.example.com/dns", "shop.example.com/hold"
	cm := configMap(t, ns, "guarded", key, hold)
	attached := finalizer.AttachedAnnotation(key)
	if err := k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,"team.example.com/note":"keep"}}}`, attached, string(cm.UID)+"/policy"))); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	read := func() *metav1.PartialObjectMetadata {
		t.Helper()
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	stale := read()

	smp := func(uid types.UID, rv string) error {
		patch := fmt.Appendf(nil, `{"metadata":{"uid":%q,"resourceVersion":%q,"$deleteFromPrimitiveList/finalizers":[%q]}}`, uid, rv, key)
		return k8s.Patch(ctx, read(), client.RawPatch(types.StrategicMergePatchType, patch))
	}
	// Someone else writes the object: the copy's resourceVersion is old.
	if err := k8s.Patch(ctx, read(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"changed":"yes"}}}`))); err != nil {
		t.Fatal(err)
	}
	if err := smp(stale.UID, stale.ResourceVersion); !apierrors.IsConflict(err) {
		t.Errorf("a strategic removal at an old resourceVersion: err = %v, want a conflict", err)
	}
	if err := smp("0b5c6f0e-0000-4a2b-9c3d-000000000000", read().ResourceVersion); err == nil {
		t.Error("a strategic removal naming another UID was applied")
	}
	if got := read().Finalizers; !cmp.Equal(got, []string{key, hold}) {
		t.Fatalf("a refused removal changed the finalizers: %v", got)
	}

	// The library, from the stale copy: conflict, read again, remove.
	rec := &recordingClient{Client: finalizer.ForClient(k8s, nil)}
	if err := finalizer.Remove(ctx, rec, stale, key); err != nil {
		t.Fatalf("Remove from a stale copy: %v", err)
	}
	// Refused once, the removal goes on with the JSON patch, which tests
	// only the entry: on an object others keep writing, the strategic
	// patch could be refused every time.
	if diff := cmp.Diff([]types.PatchType{types.StrategicMergePatchType, types.JSONPatchType}, rec.patches); diff != "" {
		t.Errorf("the removal's patches (-want +got):\n%s", diff)
	}
	got := read()
	want := map[string]any{"finalizers": []string{hold}, "note": "keep", "attached": false}
	_, stillAttached := got.Annotations[attached]
	gotSummary := map[string]any{"finalizers": got.Finalizers, "note": got.Annotations["team.example.com/note"], "attached": stillAttached}
	if diff := cmp.Diff(want, gotSummary); diff != "" {
		t.Errorf("after the removal (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{hold}, stale.Finalizers); diff != "" {
		t.Errorf("the caller's copy is not the server's answer (-want +got):\n%s", diff)
	}
	// Removing it again finds it gone: nothing else is touched.
	if err := finalizer.Remove(ctx, finalizer.ForClient(k8s, nil), read(), key); err != nil {
		t.Fatal(err)
	}
	if got := read().Finalizers; !cmp.Equal(got, []string{hold}) {
		t.Errorf("finalizers after a second removal = %v", got)
	}
}

// recordingClient records the type of every patch sent through it.
type recordingClient struct {
	finalizer.Client
	patches []types.PatchType
}

func (c *recordingClient) Patch(ctx context.Context, obj client.Object, pt types.PatchType, data []byte) error {
	c.patches = append(c.patches, pt)
	return c.Client.Patch(ctx, obj, pt, data)
}
