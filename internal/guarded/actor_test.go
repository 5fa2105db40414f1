/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package guarded

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestActor is the decision the promise tests prove on a control plane
// (test/chaos keys_test.go, yield_test.go), as a table: which one
// policy acts on one key of one object, from the records bound to it and
// the policies in force.
func TestActor(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	const key = "example.com/k"
	const objUID = "0b1e0000-0000-4000-8000-000000000001"
	served := func(kind policy.Kind, name string, uid types.UID, created time.Time, finishing bool) *policy.Served {
		ns := "shop"
		if kind == policy.KindCluster {
			ns = ""
		}
		return &policy.Served{
			Policy: &policy.Policy{Ref: policy.Ref{Kind: kind, Namespace: ns, Name: name}, UID: uid, Key: key, Created: created},
			Keys:   []policy.ServedKey{{Key: key, Kinds: []schema.GroupVersionKind{cm}, Finishing: finishing}},
		}
	}
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	tenant := served(policy.KindNamespaced, "tenant", "tenant-uid", t0, false)
	tenantYielded := served(policy.KindNamespaced, "tenant", "tenant-uid", t0, true)
	younger := served(policy.KindNamespaced, "younger", "younger-uid", t0.Add(time.Minute), false)
	cluster := served(policy.KindCluster, "platform", "cluster-uid", t0.Add(time.Hour), false)
	// upgraded was first served by this release an hour after t0, and has
	// yielded its key to the cluster policy since.
	upgraded := served(policy.KindNamespaced, "tenant", "tenant-uid", t0, true)
	upgraded.BoundRecordsSince = t0.Add(time.Hour)
	createdAt := func(o *metav1.PartialObjectMetadata, at time.Time) *metav1.PartialObjectMetadata {
		o.CreationTimestamp = metav1.Time{Time: at}
		return o
	}

	object := func(deleting bool, annotations map[string]string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "x", UID: objUID, Finalizers: []string{key}, Annotations: annotations}}
		if deleting {
			o.DeletionTimestamp = &metav1.Time{Time: t0}
		}
		return o
	}
	attachedBy := func(policyUID string) map[string]string {
		return map[string]string{finalizer.AttachedAnnotation(key): objUID + "/" + policyUID}
	}
	cases := map[string]struct {
		policies []*policy.Served
		obj      *metav1.PartialObjectMetadata
		started  types.UID // the step record's policy, bound to the object
		earlier  types.UID // the step record's policy, an earlier release's (bound to no object)
		exists   []types.UID
		want     string // the acting policy's name, "" for nobody
		wantWait time.Duration
	}{
		"one owner": {policies: []*policy.Served{tenant}, obj: object(false, nil), want: "tenant"},
		"a cluster policy outranks a TeardownPolicy":   {policies: []*policy.Served{tenant, cluster}, obj: object(false, nil), want: "platform"},
		"the older of two TeardownPolicies":            {policies: []*policy.Served{younger, tenant}, obj: object(false, nil), want: "tenant"},
		"a yielded policy never acts on a live object": {policies: []*policy.Served{tenantYielded, cluster}, obj: object(false, attachedBy("tenant-uid")), want: "platform"},
		"a teardown finishes under who started it": {
			policies: []*policy.Served{tenantYielded, cluster}, obj: object(true, nil), started: "tenant-uid", exists: []types.UID{"tenant-uid"}, want: "tenant"},
		"an object finishes under who attached it": {
			policies: []*policy.Served{tenantYielded, cluster}, obj: object(true, attachedBy("tenant-uid")), exists: []types.UID{"tenant-uid"}, want: "tenant"},
		"who started it exists but is not served: nobody acts yet": {
			policies: []*policy.Served{cluster}, obj: object(true, attachedBy("tenant-uid")), exists: []types.UID{"tenant-uid"}, wantWait: startedTeardownWait},
		"who started it is gone: the owner starts over": {
			policies: []*policy.Served{cluster}, obj: object(true, nil), started: "gone-uid", want: "platform"},
		"an attached record of another object proves nothing": {
			policies: []*policy.Served{tenantYielded, cluster}, obj: object(true, map[string]string{finalizer.AttachedAnnotation(key): "another-object/tenant-uid"}), exists: []types.UID{"tenant-uid"}, want: "platform"},
		"an earlier release's record, on an object created before the policy was first served by this one": {
			policies: []*policy.Served{upgraded, cluster}, obj: createdAt(object(true, nil), t0), earlier: "tenant-uid", exists: []types.UID{"tenant-uid"}, want: "tenant"},
		"an earlier release's record, on an object created after: anyone may have written it": {
			policies: []*policy.Served{upgraded, cluster}, obj: createdAt(object(true, nil), t0.Add(2*time.Hour)), earlier: "tenant-uid", exists: []types.UID{"tenant-uid"}, want: "platform"},
		"an earlier release's record, a policy never served by this release": {
			policies: []*policy.Served{tenantYielded, cluster}, obj: createdAt(object(true, nil), t0), earlier: "tenant-uid", exists: []types.UID{"tenant-uid"}, want: "platform"},
		"a record of this release outweighs an earlier release's": {
			policies: []*policy.Served{upgraded, cluster}, obj: createdAt(object(true, nil), t0), earlier: "tenant-uid", started: "cluster-uid", exists: []types.UID{"tenant-uid", "cluster-uid"}, want: "platform"},
		"only a yielded policy, nothing it started: nobody": {
			policies: []*policy.Served{tenantYielded}, obj: object(true, nil), want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Reconciler{
				Records:                 testProofs{started: tc.started},
				StartedByEarlierRelease: func(metav1.Object, string) (types.UID, bool) { return tc.earlier, tc.earlier != "" },
				PolicyExists: func(_ context.Context, uid types.UID) (bool, error) {
					for _, u := range tc.exists {
						if u == uid {
							return true, nil
						}
					}
					return false, nil
				},
			}
			s, _, wait, err := r.actor(context.Background(), tc.policies, key, cm, tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if s != nil {
				got = s.Ref.Name
			}
			if diff := cmp.Diff(struct {
				Actor string
				Wait  time.Duration
			}{tc.want, tc.wantWait}, struct {
				Actor string
				Wait  time.Duration
			}{got, wait}); diff != "" {
				t.Errorf("actor (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAttachedByAnother is the live-object half of the yield rule (model
// test seed 33): the owner of a key leaves alone a live object another
// policy that still exists attached.
func TestAttachedByAnother(t *testing.T) {
	const key, objUID = "example.com/k", "0b1e0000-0000-4000-8000-000000000002"
	obj := func(value string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: objUID}}
		if value != "" {
			o.Annotations = map[string]string{finalizer.AttachedAnnotation(key): value}
		}
		return o
	}
	exists := func(_ context.Context, uid types.UID) (bool, error) { return uid == "tenant-uid", nil }
	cases := map[string]struct {
		obj  *metav1.PartialObjectMetadata
		want bool
	}{
		"no record":                        {obj(""), false},
		"attached by this policy":          {obj(objUID + "/self-uid"), false},
		"attached by another that exists":  {obj(objUID + "/tenant-uid"), true},
		"attached by another that is gone": {obj(objUID + "/gone-uid"), false},
		"a record of another object":       {obj("other/tenant-uid"), false},
		"a record written at CREATE":       {obj(finalizer.AttachedAtCreate), false},
		"the legacy record names no one":   {obj("true"), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Reconciler{PolicyExists: exists, Records: testProofs{}}
			got, err := r.attachedByAnother(context.Background(), tc.obj, key, "self-uid")
			if err != nil || got != tc.want {
				t.Errorf("attachedByAnother = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// testProofs answers StartedBy with started, and reads attached records
// as a controller without keys does.
type testProofs struct{ started types.UID }

func (p testProofs) StartedBy(metav1.Object, string) (types.UID, bool) {
	return p.started, p.started != ""
}

func (testProofs) AttachedBy(obj metav1.Object, key string) (types.UID, bool) {
	return steps.Records{}.AttachedBy(obj, key)
}
