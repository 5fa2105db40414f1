/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package guarded

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// patchAnswer answers every patch with err (nil: accepted).
type patchAnswer struct{ err error }

func (p patchAnswer) Patch(context.Context, client.Object, types.PatchType, []byte) error {
	return p.err
}
func (patchAnswer) Read(context.Context, client.Object) error { return nil }

// TestApplyRecordsRefusals: what the guarded reconciler keeps in a policy's
// refused objects (its status.refusedObjects), from the API server's answer
// to the attach patch or the progress record.
func TestApplyRecordsRefusals(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	const key = "example.com/k"
	full := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", field.ErrorList{field.TooLong(field.NewPath("metadata", "annotations"), "", 262144)})
	testFailed := apierrors.NewGenericServerResponse(422, "", schema.GroupResource{}, "", "testing value /metadata/finalizers failed", 0, false)
	pending := finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result {
		return finalizer.Pending(time.Minute, "waiting")
	})
	for name, tc := range map[string]struct {
		deleting, selected bool
		before             string // the write already held as refused, if any
		answer             error
		want               string // the write held afterwards; "" for none
		wantErr            bool
	}{
		"attach refused":                    {selected: true, answer: full, want: finalizer.WriteAttach},
		"attach accepted":                   {selected: true, before: finalizer.WriteAttach},
		"attach lost a race: not a refusal": {selected: true, answer: testFailed, wantErr: true},
		"attach unavailable: kept as it was": {
			selected: true, before: finalizer.WriteAttach, answer: apierrors.NewServiceUnavailable("later"), want: finalizer.WriteAttach, wantErr: true},
		"no longer selected":                   {before: finalizer.WriteAttach},
		"progress refused":                     {deleting: true, selected: true, answer: full, want: finalizer.WriteProgress},
		"progress recorded":                    {deleting: true, selected: true, before: finalizer.WriteProgress},
		"deleted after its attach was refused": {deleting: true, selected: true, before: finalizer.WriteAttach, want: finalizer.WriteAttach},
	} {
		t.Run(name, func(t *testing.T) {
			app := "other"
			if tc.selected {
				app = "web"
			}
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "x", UID: "obj-uid", Labels: map[string]string{"app": app}}}
			if tc.deleting {
				obj.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				obj.Finalizers = []string{key}
			}
			fin := finalizer.New(patchAnswer{tc.answer}, finalizer.WithAttachedBy("policy-uid"))
			if err := fin.Register(key, pending); err != nil {
				t.Fatal(err)
			}
			s := &policy.Served{
				Policy: &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "shop", Name: "p"}, UID: "policy-uid", Key: key,
					Targets: []policy.Selector{{GVK: cm, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}}},
				Keys:    []policy.ServedKey{{Key: key, Kinds: []schema.GroupVersionKind{cm}, Fin: fin}},
				Refused: policy.NewRefused(),
			}
			if tc.before != "" {
				s.Refused.Add(policy.RefusedObject{UID: obj.UID, Name: obj.Name, Write: tc.before})
			}
			r := &Reconciler{}
			after, err := r.apply(t.Context(), s, s.Keys[0], cm, obj, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("apply error = %v, want an error: %v", err, tc.wantErr)
			}
			got := ""
			if l := s.Refused.List(); len(l) == 1 {
				got = l[0].Write
				if errors.Is(tc.answer, full) && l[0].Message == "" {
					t.Error("a refusal is held without the API server's answer")
				}
			}
			if got != tc.want {
				t.Errorf("held as refused: %q, want %q", got, tc.want)
			}
			if tc.want == finalizer.WriteAttach && !tc.deleting && !tc.wantErr && after != refusedRecheck {
				t.Errorf("a refused attach is looked at again after %s, want %s", after, refusedRecheck)
			}
		})
	}
}
