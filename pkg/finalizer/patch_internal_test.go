/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPatches(t *testing.T) {
	obj := func(uid string, finalizers ...string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", UID: "u1", Finalizers: finalizers}}
	}
	remove := func(o *corev1.ConfigMap, i int, name string) ([]byte, error) {
		_, data, err := removePatch(o, i, name, true, nil)
		return data, err
	}
	cases := map[string]struct {
		reason string
		build  func() ([]byte, error)
		want   string
	}{
		"add to no list": {
			reason: "an absent list is tested as null and created whole",
			build:  func() ([]byte, error) { return addPatch(obj("u1"), []string{"a.io/x"}, nil) },
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["a.io/x"]}]`,
		},
		"add to a list": {
			reason: "an existing list is tested whole, then appended to",
			build:  func() ([]byte, error) { return addPatch(obj("u1", "b.io/y"), []string{"a.io/x", "c.io/z"}, nil) },
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers","value":["b.io/y"]},{"op":"add","path":"/metadata/finalizers/-","value":"a.io/x"},{"op":"add","path":"/metadata/finalizers/-","value":"c.io/z"}]`,
		},
		"add with the attached record, no annotations": {
			reason: "an absent annotation map is tested as null and created with the record, in the same patch",
			build:  func() ([]byte, error) { return addPatch(obj("u1"), []string{"a.io/x"}, &attacher{}) },
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/annotations","value":null},{"op":"add","path":"/metadata/annotations","value":{"attached.finalizer.teardown.dev/a.io_x":"u1"}},{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["a.io/x"]}]`,
		},
		"add with the attached record, annotations present": {
			reason: "the record is added as a member, its key escaped as a JSON pointer, naming who attached it",
			build: func() ([]byte, error) {
				o := obj("u1")
				o.Annotations = map[string]string{"other": "x"}
				return addPatch(o, []string{"a.io/x"}, &attacher{by: "policy-uid"})
			},
			want: `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"add","path":"/metadata/annotations/attached.finalizer.teardown.dev~1a.io_x","value":"u1/policy-uid"},{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["a.io/x"]}]`,
		},
		"add with a sealed attached record": {
			reason: "a sealer's seal goes in an annotation of its own beside the record (an earlier release reads the record as before), over the record's annotation, the UID and who attached it",
			build: func() ([]byte, error) {
				return addPatch(obj("u1"), []string{"a.io/x"}, &attacher{by: "policy-uid", sealer: joinSealer{}})
			},
			want: `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/annotations","value":null},{"op":"add","path":"/metadata/annotations","value":{"attached.finalizer.teardown.dev/a.io_x":"u1/policy-uid","seal.finalizer.teardown.dev/a.io_x":"attached.finalizer.teardown.dev/a.io_x+u1+policy-uid"}},{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["a.io/x"]}]`,
		},
		"remove by index": {
			reason: "the entry at the index is tested before it is removed",
			build:  func() ([]byte, error) { return remove(obj("u1", "b.io/y", "a.io/x"), 1, "a.io/x") },
			want:   `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/deletionTimestamp","value":null},{"op":"test","path":"/metadata/finalizers/1","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/1","value":null}]`,
		},
		"remove with the attached record": {
			reason: "the record goes in the same patch as the key it records",
			build: func() ([]byte, error) {
				o := obj("u1", "a.io/x")
				o.Annotations = map[string]string{AttachedAnnotation("a.io/x"): "true", "other": "y"}
				return remove(o, 0, "a.io/x")
			},
			want: `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/deletionTimestamp","value":null},{"op":"test","path":"/metadata/finalizers/0","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/0","value":null},{"op":"remove","path":"/metadata/annotations/attached.finalizer.teardown.dev~1a.io_x","value":null},{"op":"add","path":"/metadata/annotations/seal.finalizer.teardown.dev~1a.io_x","value":""},{"op":"remove","path":"/metadata/annotations/seal.finalizer.teardown.dev~1a.io_x","value":null}]`,
		},
		"remove from an object being deleted": {
			reason: "deletionTimestamp cannot be unset, so there is nothing to test",
			build: func() ([]byte, error) {
				o := obj("u1", "a.io/x")
				o.DeletionTimestamp = &metav1.Time{}
				return remove(o, 0, "a.io/x")
			},
			want: `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/0","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/0","value":null}]`,
		},
		"remove from a built-in kind being deleted": {
			reason: "a strategic merge patch pinned to the resourceVersion and the uid, the key deleted by value, the record in the same patch",
			build: func() ([]byte, error) {
				o := obj("u1", "b.io/y", "a.io/x")
				o.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
				o.DeletionTimestamp, o.ResourceVersion = &metav1.Time{}, "42"
				o.Annotations = map[string]string{AttachedAnnotation("a.io/x"): "u1/p"}
				return remove(o, 1, "a.io/x")
			},
			want: `{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.io/x"],"annotations":{"attached.finalizer.teardown.dev/a.io_x":null,"seal.finalizer.teardown.dev/a.io_x":null},"resourceVersion":"42","uid":"u1"}}`,
		},
		"remove from a built-in kind not being deleted": {
			reason: "a merge patch cannot test deletionTimestamp null: the JSON patch",
			build: func() ([]byte, error) {
				o := obj("u1", "a.io/x")
				o.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
				o.ResourceVersion = "42"
				return remove(o, 0, "a.io/x")
			},
			want: `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/deletionTimestamp","value":null},{"op":"test","path":"/metadata/finalizers/0","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/0","value":null}]`,
		},
		"remove a key listed twice from a built-in kind being deleted": {
			reason: "deleting by value would take both: the JSON patch removes the one at the index",
			build: func() ([]byte, error) {
				o := obj("u1", "a.io/x", "a.io/x")
				o.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
				o.DeletionTimestamp, o.ResourceVersion = &metav1.Time{}, "42"
				return remove(o, 1, "a.io/x")
			},
			want: `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/1","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/1","value":null}]`,
		},
		"remove from a custom resource being deleted": {
			reason: "custom resources take no strategic merge patch: the JSON patch",
			build: func() ([]byte, error) {
				o := obj("u1", "a.io/x")
				o.TypeMeta = metav1.TypeMeta{APIVersion: "shop.example.com/v1", Kind: "Database"}
				o.DeletionTimestamp, o.ResourceVersion = &metav1.Time{}, "42"
				return remove(o, 0, "a.io/x")
			},
			want: `[{"op":"test","path":"/metadata/uid","value":"u1"},{"op":"test","path":"/metadata/finalizers/0","value":"a.io/x"},{"op":"remove","path":"/metadata/finalizers/0","value":null}]`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestProgressAnnotation(t *testing.T) {
	cases := map[string]struct {
		finalizer string
		want      string
	}{
		"short":  {finalizer: "my.custom/finalizer", want: "progress.finalizer.teardown.dev/my.custom_finalizer"},
		"hashed": {finalizer: "a-very-long-domain.example.com/" + strings.Repeat("x", 40), want: "progress.finalizer.teardown.dev/a-very-long-domain.example.com_xxxxxxxxxxxxxxx-"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ProgressAnnotation(tc.finalizer)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("ProgressAnnotation(%q) = %q, want prefix %q", tc.finalizer, got, tc.want)
			}
			if name := strings.TrimPrefix(got, ProgressAnnotationPrefix); len(name) > 63 {
				t.Errorf("annotation name %q is %d characters, over 63", name, len(name))
			}
		})
	}
}

func TestProgressPatchTruncatesAndRoundTrips(t *testing.T) {
	p := Progress{Finalizer: "a.io/x", State: StateRetry, Message: strings.Repeat("m", 1000), Attempts: 3}
	data, err := progressPatch(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 600 {
		t.Errorf("progress patch is %d bytes; the message should be truncated", len(data))
	}
	cm := &corev1.ConfigMap{}
	cm.Annotations = map[string]string{}
	// Apply the merge patch by hand: it sets exactly one annotation.
	var patch struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &patch); err != nil {
		t.Fatal(err)
	}
	if len(patch.Metadata.Annotations) != 1 {
		t.Fatalf("patch sets %d annotations, want 1", len(patch.Metadata.Annotations))
	}
	cm.Annotations = patch.Metadata.Annotations
	got := ReadProgress(cm)
	want := []Progress{{Finalizer: "a.io/x", State: StateRetry, Message: strings.Repeat("m", maxProgressMessage-3) + "...", Attempts: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}

// joinSealer seals with its parts joined, to show what a seal covers.
type joinSealer struct{}

func (joinSealer) Seal(parts ...string) string { return strings.Join(parts, "+") }

func (joinSealer) Verify(seal string, parts ...string) bool { return seal == strings.Join(parts, "+") }
