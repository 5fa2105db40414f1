/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestOwes is what holds the deletion of a policy that cannot be served
// (model seed 118: a deleted TeardownPolicy that had yielded its key to a
// ClusterTeardownPolicy, restarted while the API server was away, went
// with the teardown it had started unfinished, and the cluster policy then
// released the object by its own deadline): under its own key every object
// carrying it; under a key another policy owns now, only the objects whose
// records name this policy.
func TestOwes(t *testing.T) {
	const key, uid, objUID = "example.com/k", "tenant-uid", "obj-uid"
	obj := func(annotations map[string]string, finalizers ...string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: objUID, Finalizers: finalizers, Annotations: annotations}}
	}
	stepRecord := func(policy string) map[string]string {
		return map[string]string{steps.StateAnnotation(key): `{"object":"` + objUID + `","policy":"` + policy + `","fingerprint":"f","step":0,"name":"b","since":"2026-11-28T15:39:50Z"}`}
	}
	attached := func(policy string) map[string]string {
		return map[string]string{finalizer.AttachedAnnotation(key): objUID + "/" + policy}
	}
	cases := map[string]struct {
		obj  *metav1.PartialObjectMetadata
		mine bool
		want bool
	}{
		"its own key":                               {obj(nil, key), true, true},
		"no key":                                    {obj(stepRecord(uid)), false, false},
		"a yielded key, a teardown it started":      {obj(stepRecord(uid), key), false, true},
		"a yielded key, an object it attached":      {obj(attached(uid), key), false, true},
		"a yielded key, another's teardown":         {obj(stepRecord("cluster-uid"), key), false, false},
		"a yielded key, nothing names it":           {obj(nil, key), false, false},
		"a yielded key, a record of another object": {obj(map[string]string{finalizer.AttachedAnnotation(key): "other/" + uid}, key), false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := owes(tc.obj, key, uid, tc.mine, steps.Records{}); got != tc.want {
				t.Errorf("owes = %v, want %v", got, tc.want)
			}
		})
	}
}
