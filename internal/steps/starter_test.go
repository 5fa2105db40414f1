/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func starterScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := teardownv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// starterClient is a fake API with StartedIndex on both kinds of policy.
func starterClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(starterScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&teardownv1alpha1.TeardownPolicy{}, &teardownv1alpha1.ClusterTeardownPolicy{}).
		WithIndex(&teardownv1alpha1.TeardownPolicy{}, StartedIndex, StartedIndexValues).
		WithIndex(&teardownv1alpha1.ClusterTeardownPolicy{}, StartedIndex, StartedIndexValues).Build()
}

func startedEntry(uid, key string, since time.Time) teardownv1alpha1.StartedTeardown {
	return teardownv1alpha1.StartedTeardown{Object: teardownv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "big"},
		UID: uid, Finalizer: key, Since: metav1.NewTime(since)}
}

// TestStartersStartedBy is who started a teardown when the object has no
// room for its step record: the policy whose status names it (only the
// controller writes it), never a record a tenant wrote on the object, and
// only while the object is being deleted and carries the key.
func TestStartersStartedBy(t *testing.T) {
	const key, objUID = "shop.example.com/k", "obj-uid"
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tenant := func(name, uid, ns string, entries ...teardownv1alpha1.StartedTeardown) *teardownv1alpha1.TeardownPolicy {
		return &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
			Status: teardownv1alpha1.TeardownPolicyStatus{StartedTeardowns: entries}}
	}
	cluster := func(name, uid string, entries ...teardownv1alpha1.StartedTeardown) *teardownv1alpha1.ClusterTeardownPolicy {
		return &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)},
			Status: teardownv1alpha1.TeardownPolicyStatus{StartedTeardowns: entries}}
	}
	forged := map[string]string{StateAnnotation(key): `{"object":"obj-uid","policy":"platform-uid","fingerprint":"f","step":0,"name":"s","since":"2026-11-28T12:00:00Z"}`}
	object := func(deleting bool, finalizers []string, annotations map[string]string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "big", UID: objUID, Finalizers: finalizers, Annotations: annotations}}
		if deleting {
			o.DeletionTimestamp = &metav1.Time{Time: t0}
		}
		return o
	}
	cases := map[string]struct {
		policies []client.Object
		obj      *metav1.PartialObjectMetadata
		want     types.UID
	}{
		"the status names who started it": {
			policies: []client.Object{tenant("a", "a-uid", "shop", startedEntry(objUID, key, t0)), cluster("platform", "platform-uid")},
			obj:      object(true, []string{key}, nil), want: "a-uid"},
		"the status outweighs a record on the object (anyone who patches it writes those)": {
			policies: []client.Object{tenant("a", "a-uid", "shop", startedEntry(objUID, key, t0)), cluster("platform", "platform-uid")},
			obj:      object(true, []string{key}, forged), want: "a-uid"},
		"no entry: the record on the object": {
			policies: []client.Object{tenant("a", "a-uid", "shop"), cluster("platform", "platform-uid")},
			obj:      object(true, []string{key}, forged), want: "platform-uid"},
		"an entry under another key": {
			policies: []client.Object{tenant("a", "a-uid", "shop", startedEntry(objUID, "other.example.com/k", t0))},
			obj:      object(true, []string{key}, nil)},
		"an entry for an object not being deleted counts for nothing": {
			policies: []client.Object{tenant("a", "a-uid", "shop", startedEntry(objUID, key, t0))},
			obj:      object(false, []string{key}, nil)},
		"an entry for an object that no longer carries the key": {
			policies: []client.Object{tenant("a", "a-uid", "shop", startedEntry(objUID, key, t0))},
			obj:      object(true, []string{"other.example.com/k"}, nil)},
		"a TeardownPolicy of another namespace names nothing here": {
			policies: []client.Object{tenant("a", "a-uid", "elsewhere", startedEntry(objUID, key, t0))},
			obj:      object(true, []string{key}, nil)},
		"a ClusterTeardownPolicy's entry": {
			policies: []client.Object{cluster("platform", "platform-uid", startedEntry(objUID, key, t0))},
			obj:      object(true, []string{key}, nil), want: "platform-uid"},
		"two entries: the earliest": {
			policies: []client.Object{cluster("platform", "platform-uid", startedEntry(objUID, key, t0.Add(time.Second))), tenant("a", "a-uid", "shop", startedEntry(objUID, key, t0))},
			obj:      object(true, []string{key}, nil), want: "a-uid"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &Starters{Cache: starterClient(t, tc.policies...)}
			got, ok := s.StartedBy(tc.obj, key)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("StartedBy = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
	var none *Starters
	if got, _ := none.StartedBy(object(true, []string{key}, forged), key); got != "platform-uid" {
		t.Errorf("a nil Starters reads the object's record: got %q", got)
	}
}

// TestStartersRecordAndPrune: an entry is written once, not past the
// bound, not by a replica whose lease may have passed, and goes once its
// object no longer carries the key.
func TestStartersRecordAndPrune(t *testing.T) {
	const key = "shop.example.com/k"
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "shop", Name: "a"}, UID: "a-uid", Key: key}
	cmGVK := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "big", UID: "big-uid", Finalizers: []string{key}}}
	obj := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "a", UID: "a-uid"}}
	c := starterClient(t, obj, big)
	s := &Starters{Cache: c, Client: c, Reader: c}
	read := func() *teardownv1alpha1.TeardownPolicy {
		p := &teardownv1alpha1.TeardownPolicy{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	target := Object{GVK: cmGVK, Obj: big}
	for range 2 {
		if err := s.Record(t.Context(), pol, key, target); err != nil {
			t.Fatal(err)
		}
	}
	got := read().Status.StartedTeardowns
	if len(got) != 1 || got[0].UID != "big-uid" || got[0].Finalizer != key || got[0].Object.Name != "big" || got[0].Object.Kind != "ConfigMap" {
		t.Fatalf("startedTeardowns = %+v; want one entry for shop/big", got)
	}

	// The object still carries the key: kept. Without it: gone.
	if err := s.Prune(t.Context(), read()); err != nil {
		t.Fatal(err)
	}
	if n := len(read().Status.StartedTeardowns); n != 1 {
		t.Fatalf("pruned an entry whose object still carries the key: %d left", n)
	}
	big.Finalizers = nil
	if err := c.Update(t.Context(), big); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(t.Context(), read()); err != nil {
		t.Fatal(err)
	}
	if n := len(read().Status.StartedTeardowns); n != 0 {
		t.Fatalf("kept %d entries whose object no longer carries the key", n)
	}

	// The bound.
	full := read()
	for i := range MaxStartedTeardowns {
		full.Status.StartedTeardowns = append(full.Status.StartedTeardowns, startedEntry("uid-"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+time.Duration(i).String(), key, time.Now()))
	}
	if err := c.Status().Update(t.Context(), full); err != nil {
		t.Fatal(err)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "other", UID: "other-uid"}}
	if err := s.Record(t.Context(), pol, key, Object{GVK: cmGVK, Obj: other}); !isStartersFull(err) {
		t.Fatalf("Record past the bound = %v; want errStartersFull", err)
	}

	// Another policy under the same name: nothing is written for it.
	replaced := *pol
	replaced.UID = "old-uid"
	if err := s.Record(t.Context(), &replaced, key, Object{GVK: cmGVK, Obj: other}); err == nil {
		t.Fatal("Record wrote into another policy's status")
	}
}

// TestRunRecordsTheStarterBeforeAnyStep: on an object whose annotations
// leave no room for the step record, no step runs before the policy's
// status names it; past the bound, none runs at all.
func TestRunRecordsTheStarterBeforeAnyStep(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(map[bool]string{false: "recorded", true: "full"}[full], func(t *testing.T) {
			polObj := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p-uid"}}
			if full {
				for i := range MaxStartedTeardowns {
					polObj.Status.StartedTeardowns = append(polObj.Status.StartedTeardowns, startedEntry(time.Duration(i).String(), testKey, time.Now()))
				}
			}
			rc := newReceiver(t, map[string]string{"first": answerSuccess})
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: "target-uid", Finalizers: []string{testKey},
				DeletionTimestamp: &metav1.Time{Time: time.Now()}, Annotations: map[string]string{"filler": strings.Repeat("x", 256*1024-100)}}}
			c := fake.NewClientBuilder().WithScheme(starterScheme(t)).WithObjects(polObj, cm).
				WithStatusSubresource(&teardownv1alpha1.TeardownPolicy{}).Build()
			r := &Runner{Client: c, Reader: c, HTTP: testClients(), Starters: &Starters{Cache: c, Client: c, Reader: c}}
			pol := newPolicy(t, "p-uid", rc.step("first", teardownv1alpha1.FailureRetry))
			res := r.Run(t.Context(), pol, testKey, Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: cm})
			stored := &teardownv1alpha1.TeardownPolicy{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(polObj), stored); err != nil {
				t.Fatal(err)
			}
			named := false
			for _, e := range stored.Status.StartedTeardowns {
				named = named || e.UID == "target-uid"
			}
			called := len(rc.takeCalls())
			if full {
				if named || called != 0 || res.State != finalizer.StatePending || !strings.Contains(res.Reason, ReasonStartedTeardownsFull) {
					t.Fatalf("past the bound: named %v, %d calls, result %+v; want nothing run, Pending %s", named, called, res, ReasonStartedTeardownsFull)
				}
				return
			}
			if !named || called == 0 {
				t.Fatalf("named in status %v, %d calls (result %+v); want named, and the step run", named, called, res)
			}
		})
	}
}
