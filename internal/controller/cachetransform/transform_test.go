/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cachetransform

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/recordseal"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

const lastApplied = corev1.LastAppliedConfigAnnotation

// fullMetadata has every field of ObjectMeta set, so that a field the
// transform dropped by mistake shows in the diff.
func fullMetadata() *metav1.PartialObjectMetadata {
	created := metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	deleted := metav1.NewTime(created.Add(time.Hour))
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", GenerateName: "we", Namespace: "shop", SelfLink: "/api/v1/namespaces/shop/configmaps/web", //nolint:staticcheck // a cached object may still carry it; the transform must drop it
			UID: types.UID("0b5c6f0e-1111-4a2b-9c3d-2e4f5a6b7c8d"), ResourceVersion: "4711", Generation: 3,
			CreationTimestamp: created, DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: ptr.To[int64](0),
			Labels: map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{
				"progress.finalizer.teardown.dev/shop.teardown.dev_dns": `{"state":"Running"}`,
				"steps.teardown.dev/shop.teardown.dev_dns":              `{"step":"deregister"}`,
				"attached.finalizer.teardown.dev/shop.teardown.dev_dns": "true",
				"team.example.com/owner":                                "payments",
				lastApplied:                                             `{"apiVersion":"v1","data":{"secret":"a copy of the data"}}`,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "1234", Controller: ptr.To(true)}},
			Finalizers:      []string{"shop.teardown.dev/dns", "kubernetes.io/pvc-protection"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
		},
	}
}

// TestCacheTransform: the transform drops managedFields and kubectl's
// last-applied-configuration, and nothing else; in particular every
// annotation a decision reads (progress, step record, attached record) and
// every annotation a webhook receives, and whether the annotations are absent
// or empty (the attach patch tests that).
func TestCacheTransform(t *testing.T) {
	cases := map[string]struct {
		in, want func() any
	}{
		"every field": {
			in: func() any { return fullMetadata() },
			want: func() any {
				obj := fullMetadata()
				obj.ManagedFields = nil
				delete(obj.Annotations, lastApplied)
				return obj
			},
		},
		"nothing set": {
			in:   func() any { return &metav1.PartialObjectMetadata{} },
			want: func() any { return &metav1.PartialObjectMetadata{} },
		},
		"empty maps and lists stay empty": {
			in: func() any {
				return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}, Finalizers: []string{}}}
			},
			want: func() any {
				return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}, Finalizers: []string{}}}
			},
		},
		"only last-applied: annotations empty, not absent": {
			in: func() any {
				return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{lastApplied: "{}"}}}
			},
			want: func() any {
				return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{}}}
			},
		},
		"typed objects: only managedFields": {
			in: func() any {
				return &corev1.ConfigMap{ObjectMeta: fullMetadata().ObjectMeta, Data: map[string]string{"k": "v"}}
			},
			want: func() any {
				cm := &corev1.ConfigMap{ObjectMeta: fullMetadata().ObjectMeta, Data: map[string]string{"k": "v"}}
				cm.ManagedFields = nil
				return cm
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := New(nil)(tc.in())
			if err != nil {
				t.Fatal(err)
			}
			// Not cmpopts.EquateEmpty: absent and empty must stay apart.
			if diff := cmp.Diff(tc.want(), got); diff != "" {
				t.Errorf("transformed object (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCacheTransformShares: objects with equal labels, annotations and
// finalizers get one shared copy of each; different ones get their own; the
// table stays bounded when every few objects bring new labels, and every
// object still reads as it was.
func TestCacheTransformShares(t *testing.T) {
	const limit = 32
	shared := newSharedMetadata(limit)
	objs := make([]*metav1.PartialObjectMetadata, 100)
	group := func(i int) string { return fmt.Sprint(i / 3) }
	for i := range objs {
		obj := fullMetadata()
		obj.Name = fmt.Sprintf("cm-%d", i)
		// Built afresh, as a decoder would: no storage in common.
		obj.Labels = map[string]string{"app": string([]byte("web")), "group": group(i)}
		obj.Finalizers = []string{string([]byte("shop.teardown.dev/dns"))}
		shared.compact(obj)
		objs[i] = obj
		if n := len(shared.strings) + len(shared.maps) + len(shared.lists); n > 2*limit {
			t.Fatalf("after %d objects the table holds %d entries, want it bounded near its limit of %d", i+1, n, limit)
		}
	}
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	a, b := objs[0], objs[2]
	if !same(a.Labels, b.Labels) || !same(a.Annotations, b.Annotations) || !same(a.Finalizers, b.Finalizers) || !same(a.Namespace, b.Namespace) {
		t.Error("equal labels, annotations, finalizers or namespaces of two objects are not shared")
	}
	if same(a.Labels, objs[3].Labels) {
		t.Error("different labels share a map")
	}
	if cap(a.Finalizers) != len(a.Finalizers) {
		t.Errorf("a shared list has room to append in place: len %d, cap %d", len(a.Finalizers), cap(a.Finalizers))
	}
	maps := map[unsafe.Pointer]bool{}
	for i, obj := range objs {
		maps[reflect.ValueOf(obj.Labels).UnsafePointer()] = true
		want := fullMetadata()
		want.Name = obj.Name
		want.Labels = map[string]string{"app": "web", "group": group(i)}
		want.Finalizers = []string{"shop.teardown.dev/dns"}
		delete(want.Annotations, lastApplied)
		if diff := cmp.Diff(want, obj); diff != "" {
			t.Errorf("object %d after the transform (-want +got):\n%s", i, diff)
		}
	}
	// 34 label sets; fewer maps than objects, though the table started
	// afresh many times.
	if n := len(maps); n < 34 || n > 60 {
		t.Errorf("%d label maps for 100 objects in 34 groups of labels, want about one per group", n)
	}
}

// TestCacheTransformSharesBoundRecords: the attached records of objects
// guarded by one policy hold each object's UID, yet the objects share one
// annotation map, and each still reads as bound to itself; a forgery of
// the shared value's text shares nothing and proves nothing.
func TestCacheTransformSharesBoundRecords(t *testing.T) {
	const key = "shop.teardown.dev/dns"
	transform := New(nil)
	read := func(i int, value func(uid string) string) *metav1.PartialObjectMetadata {
		uid := fmt.Sprintf("0b5c6f0e-1111-4a2b-9c3d-%012d", i)
		out, err := transform(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("cm-%d", i), Namespace: "shop", UID: types.UID(uid),
			Annotations: map[string]string{record.AttachedAnnotation(key): value(uid), "team.example.com/owner": "payments"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*metav1.PartialObjectMetadata)
	}
	bound := func(uid string) string { return uid + "/policy-uid-a" }
	a, b := read(1, bound), read(2, bound)
	forged := read(3, func(string) string { return "<bound>/policy-uid-a" })
	same := func(x, y map[string]string) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	if !same(a.Annotations, b.Annotations) {
		t.Error("two objects attached by one policy do not share their annotation map")
	}
	if same(a.Annotations, forged.Annotations) {
		t.Error("an object with a forged record shares the map of objects with bound ones")
	}
	for _, c := range []struct {
		obj       *metav1.PartialObjectMetadata
		wantBound bool
	}{{a, true}, {b, true}, {forged, false}} {
		by, ok := record.AttachedBy(c.obj.DeepCopy(), key)
		if ok != c.wantBound || (ok && by != "policy-uid-a") {
			t.Errorf("%s: AttachedBy = %q, %v; want bound %v", c.obj.Name, by, ok, c.wantBound)
		}
	}
}

// TestCacheTransformSharesOnlySealedRecords: with keys, the transform
// shares the attached records whose seal checks (and drops the seal, which
// would keep each object's map its own), and they read as proven; a bound
// record without a seal, on an object created after the keys, or with a
// seal of another object, is left as it is and proves nothing.
func TestCacheTransformSharesOnlySealedRecords(t *testing.T) {
	const key = "shop.teardown.dev/dns"
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	keys, err := recordseal.New(map[string][]byte{"k1": []byte(strings.Repeat("k", 32))}, since)
	if err != nil {
		t.Fatal(err)
	}
	records := steps.Records{Keys: keys}
	transform := New(records.AttachedProven)
	read := func(i int, seal func(uid string) string) *metav1.PartialObjectMetadata {
		uid := fmt.Sprintf("0b5c6f0e-1111-4a2b-9c3d-%012d", i)
		annotations := map[string]string{record.AttachedAnnotation(key): uid + "/policy-uid-a", "team.example.com/owner": "payments"}
		if s := seal(uid); s != "" {
			annotations[record.SealAnnotation(key)] = s
		}
		out, err := transform(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("cm-%d", i), Namespace: "shop", UID: types.UID(uid), CreationTimestamp: metav1.NewTime(since.Add(time.Hour)),
			Annotations: annotations,
		}})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*metav1.PartialObjectMetadata)
	}
	sealed := func(uid string) string { return record.AttachedSeal(key, uid, "policy-uid-a", keys) }
	a, b := read(1, sealed), read(2, sealed)
	unsealed := read(3, func(string) string { return "" })
	copied := read(4, func(string) string { return sealed("0b5c6f0e-1111-4a2b-9c3d-000000000001") })
	if reflect.ValueOf(a.Annotations).UnsafePointer() != reflect.ValueOf(b.Annotations).UnsafePointer() {
		t.Error("two objects with sealed records of one policy do not share their annotation map")
	}
	if _, ok := a.Annotations[record.SealAnnotation(key)]; ok {
		t.Error("the seal of a shared record was kept")
	}
	for _, c := range []struct {
		obj  *metav1.PartialObjectMetadata
		want bool
	}{{a, true}, {b, true}, {unsealed, false}, {copied, false}} {
		by, ok := records.AttachedBy(c.obj.DeepCopy(), key)
		if ok != c.want || ok && by != "policy-uid-a" {
			t.Errorf("%s: AttachedBy = %q, %v; want proven %v", c.obj.Name, by, ok, c.want)
		}
	}
}

// FuzzCacheTransform: whatever labels, annotations and finalizers objects
// carry (anyone who can write an object chooses them), the transform gives
// back equal ones, less kubectl's last-applied-configuration, also when
// their hashes collide and the table starts afresh; an attached record may
// change its value (record.ShareAttached) but reads as it did.
func FuzzCacheTransform(f *testing.F) {
	f.Add("app", "web", "team.example.com/owner", "payments", "shop.teardown.dev/dns", true, false)
	f.Add("", "", lastApplied, "{}", "", false, false)
	f.Add("app", "web", record.AttachedAnnotation("shop.teardown.dev/dns"), "policy", "shop.teardown.dev/dns", false, true)
	f.Add("app", "web", record.AttachedAnnotation("shop.teardown.dev/dns"), "<bound>/policy", "shop.teardown.dev/dns", false, false)
	f.Fuzz(func(t *testing.T, k, v, annotation, value, fin string, applied, bound bool) {
		shared := newSharedMetadata(4)
		for i := range 6 {
			uid := fmt.Sprintf("uid-%d", i)
			val := value
			if bound {
				val = uid + "/" + value
			}
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprint(i), Namespace: k, UID: types.UID(uid),
				Labels:      map[string]string{k: v, "i": fmt.Sprint(i % 2)},
				Annotations: map[string]string{annotation: val},
				Finalizers:  []string{fin, fin + fmt.Sprint(i%3)},
			}}
			if applied {
				obj.Annotations[lastApplied] = val
			}
			// Strings of their own, as decoded: none is a shared record's value.
			want := obj.DeepCopy()
			want.Annotations = map[string]string{}
			for k, v := range obj.Annotations {
				want.Annotations[strings.Clone(k)] = strings.Clone(v)
			}
			delete(want.Annotations, lastApplied)
			wantBy, wantBound := record.AttachedBy(want, fin)
			shared.compact(obj)
			if by, ok := record.AttachedBy(obj, fin); by != wantBy || ok != wantBound {
				t.Fatalf("object %d: AttachedBy after the transform = %q, %v; before %q, %v", i, by, ok, wantBy, wantBound)
			}
			if record.MarkedAttached(obj, fin) != record.MarkedAttached(want, fin) {
				t.Fatalf("object %d: MarkedAttached changed", i)
			}
			for k := range want.Annotations {
				if strings.HasPrefix(k, record.AttachedAnnotationPrefix) {
					want.Annotations[k] = obj.Annotations[k]
				}
			}
			if diff := cmp.Diff(want, obj); diff != "" {
				t.Fatalf("object %d after the transform (-want +got):\n%s", i, diff)
			}
		}
	})
}
