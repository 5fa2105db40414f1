/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fromAPI returns obj as a client decodes it from the API server: every
// string freshly allocated, none of them a value ShareAttached made.
func fromAPI(t *testing.T, obj *metav1.ObjectMeta) *metav1.ObjectMeta {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := &metav1.ObjectMeta{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestShareAttached(t *testing.T) {
	const key = "shop.example.com/dns"
	long := "uid-1/" + strings.Repeat("p", maxAttachedValue)
	type read struct {
		Value string
		By    string
		Bound bool
	}
	for _, tc := range []struct {
		name  string
		value string
		want  read
	}{
		{"bound, naming who attached it", "uid-1/policy-a", read{"<bound>/policy-a", "policy-a", true}},
		{"bound, naming no one", "uid-1", read{"<bound>", "", true}},
		{"bound to another object (copied, restored)", "uid-2/policy-a", read{"uid-2/policy-a", "", false}},
		{"written at CREATE", AttachedAtCreate, read{AttachedAtCreate, "", false}},
		{"an earlier version's record", "true", read{"true", "", false}},
		{"a forgery of the shared value's text", "<bound>/policy-a", read{"<unproven><bound>/policy-a", "", false}},
		{"a forgery naming no one", "<bound>", read{"<unproven><bound>", "", false}},
		{"too long to compare", long, read{long, "", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromAPI(t, &metav1.ObjectMeta{UID: "uid-1", Annotations: map[string]string{
				AttachedAnnotation(key): tc.value,
				"team.example.com/note": "<bound>/policy-a",
			}})
			by, bound := AttachedBy(obj, key)
			wantBefore := tc.want.Bound
			if bound != wantBefore || by != tc.want.By {
				t.Errorf("before sharing: AttachedBy = %q, %v; want %q, %v", by, bound, tc.want.By, wantBefore)
			}
			ShareAttached(obj)
			by, bound = AttachedBy(obj, key)
			got := read{obj.Annotations[AttachedAnnotation(key)], by, bound}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("after sharing (-want +got):\n%s", diff)
			}
			if obj.Annotations["team.example.com/note"] != "<bound>/policy-a" {
				t.Error("ShareAttached changed an annotation that is not an attached record")
			}
			// Shared again (client-go asks transforms to be idempotent):
			// the same.
			ShareAttached(obj)
			if by, bound := AttachedBy(obj, key); bound != tc.want.Bound || by != tc.want.By || obj.Annotations[AttachedAnnotation(key)] != tc.want.Value {
				t.Errorf("shared twice: %q, %v, value %q", by, bound, obj.Annotations[AttachedAnnotation(key)])
			}
			// What a cache hands out is a deep copy: still bound.
			if _, bound := AttachedBy(obj.DeepCopy(), key); bound != tc.want.Bound {
				t.Errorf("a deep copy: bound = %v, want %v", bound, tc.want.Bound)
			}
			// The shared value's text, from the API server (written there
			// by a cached copy sent back, or by hand), proves nothing.
			if _, bound := AttachedBy(fromAPI(t, obj), key); bound {
				t.Error("the shared value's text, decoded from the API server, was read as bound")
			}
			// Nor does it, sent back through a cache.
			again := fromAPI(t, obj)
			ShareAttached(again)
			if _, bound := AttachedBy(again, key); bound {
				t.Errorf("the shared value's text, shared again, was read as bound: %q", again.Annotations[AttachedAnnotation(key)])
			}
		})
	}
}

// TestShareAttachedShares: objects whose records name the same attacher
// carry the same string, so a cache can share their annotation maps.
func TestShareAttachedShares(t *testing.T) {
	const key = "shop.example.com/dns"
	var values []string
	for i := range 3 {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		obj := fromAPI(t, &metav1.ObjectMeta{UID: uid, Annotations: map[string]string{AttachedAnnotation(key): string(uid) + "/policy-a"}})
		ShareAttached(obj)
		values = append(values, obj.Annotations[AttachedAnnotation(key)])
	}
	for _, v := range values[1:] {
		if unsafe.StringData(v) != unsafe.StringData(values[0]) {
			t.Fatalf("records naming one attacher on three objects are not one string: %q", values)
		}
	}
}

// TestShareAttachedPastItsBound: past the attachers it keeps a value for,
// a record keeps its own value, read as before.
func TestShareAttachedPastItsBound(t *testing.T) {
	s := &sharedValues{limit: 2}
	for _, by := range []string{"a", "b"} {
		if _, ok := s.value(by); !ok {
			t.Fatalf("value(%q) refused below the bound", by)
		}
	}
	if _, ok := s.value("c"); ok {
		t.Error("value past the bound was made")
	}
	if v, ok := s.value("a"); !ok || v != "<bound>/a" {
		t.Errorf("value(a) after the bound = %q, %v", v, ok)
	}
	if _, ok := s.is("<bound>/c"); ok {
		t.Error("a value never made was recognized")
	}
}
