/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRemovalPatch(t *testing.T) {
	obj := func(deleting bool, annotations map[string]string, finalizers ...string) *metav1.ObjectMeta {
		m := &metav1.ObjectMeta{Name: "x", UID: "u1", Finalizers: finalizers, Annotations: annotations}
		if deleting {
			m.DeletionTimestamp = &metav1.Time{}
		}
		return m
	}
	attached := map[string]string{AttachedAnnotation("a.io/x"): "true", "other": "y"}
	cases := map[string]struct {
		reason string
		obj    *metav1.ObjectMeta
		r      Removal
		want   string
	}{
		"library, live object": {
			reason: "uid and entry tested; a live object's deletionTimestamp tested null",
			obj:    obj(false, nil, "b.io/y", "a.io/x"),
			r:      Removal{Finalizer: "a.io/x", Index: 1},
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/deletionTimestamp","value":null},{"op":"test","path":"/metadata/finalizers/1","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/1","value":null}]`,
		},
		"library, attached record": {
			reason: "the attached record goes in the same patch",
			obj:    obj(true, attached, "a.io/x"),
			r:      Removal{Finalizer: "a.io/x", Index: 0},
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/0","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/0","value":null},{"op":"remove","path":"/metadata/annotations/attached.finalizer.teardown.dev~1a.io_x","value":null},{"op":"add","path":"/metadata/annotations/seal.finalizer.teardown.dev~1a.io_x","value":""},{"op":"remove","path":"/metadata/annotations/seal.finalizer.teardown.dev~1a.io_x","value":null}]`,
		},
		"RBAC kind keeps the attached record": {
			reason: "the escalation check would refuse a patch touching a Role's annotations",
			obj:    obj(true, attached, "a.io/x"),
			r:      Removal{Finalizer: "a.io/x", Index: 0, Group: "rbac.authorization.k8s.io"},
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/0","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/0","value":null}]`,
		},
		"release, no annotations": {
			reason: "release pins the resourceVersion, and creates the annotation map after testing it absent",
			obj:    obj(true, nil, "b.io/y", "a.io/x"),
			r:      Removal{Finalizer: "a.io/x", Index: 1, ResourceVersion: "42", Released: "audit"},
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"test","path":"/metadata/finalizers/1","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/1","value":null},{"op":"test","path":"/metadata/annotations","value":null},{"op":"add","path":"/metadata/annotations","value":{"teardown.dev/released-finalizer":"audit"}}]`,
		},
		"release, attached record and annotations": {
			reason: "release keeps the attached record (only the controller may change it) and adds its record as a member",
			obj:    obj(true, attached, "a.io/x"),
			r:      Removal{Finalizer: "a.io/x", Index: 0, KeepAttached: true, ResourceVersion: "42", Released: "audit"},
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"test","path":"/metadata/finalizers/0","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/0","value":null},{"op":"add","path":"/metadata/annotations/teardown.dev~1released-finalizer","value":"audit"}]`,
		},
		"release --force of a live object": {
			reason: "deletion starting meanwhile fails the patch",
			obj:    obj(false, map[string]string{}, "a.io/x"),
			r:      Removal{Finalizer: "a.io/x", Index: 0, ResourceVersion: "42", Released: "audit"},
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"test","path":"/metadata/deletionTimestamp","value":null},{"op":"test","path":"/metadata/finalizers/0","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/0","value":null},{"op":"add","path":"/metadata/annotations/teardown.dev~1released-finalizer","value":"audit"}]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := RemovalPatch(tc.obj, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
	if _, err := RemovalPatch(obj(true, nil, "a.io/x"), Removal{Finalizer: "b.io/y", Index: 0}); err == nil {
		t.Error("a finalizer not at its index: no error")
	}
	if _, err := RemovalPatch(obj(true, nil, "a.io/x"), Removal{Finalizer: "a.io/x", Index: 1}); err == nil {
		t.Error("an index past the list: no error")
	}
}
