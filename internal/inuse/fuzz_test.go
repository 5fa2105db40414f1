/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FuzzPodOf feeds pods of any shape (anyone who may create a pod writes
// them) through the transform, the index and a lookup of everything they
// reference: nothing may panic, the record must be sorted and free of empty
// names, and the pod must be found under each name it references.
func FuzzPodOf(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"metadata":{"namespace":"a","name":"p"},"spec":{"serviceAccountName":"sa","volumes":[{"name":"v","secret":{"secretName":"s"}},{"name":"p","projected":{"sources":[{"configMap":{"name":"c"}},{"secret":{}},{}]}},{"name":"csi","csi":{"driver":"d","nodePublishSecretRef":{"name":"n"}}},{"name":"x","rbd":{"monitors":[],"image":"i","secretRef":{}}}]}}`,
		`{"metadata":{"namespace":"a","name":"p","ownerReferences":[{"kind":"DaemonSet","name":"d","controller":true},{"controller":true}]},"spec":{"imagePullSecrets":[{},{"name":"pull"}],"containers":[{"env":[{"valueFrom":{}},{"valueFrom":{"secretKeyRef":{"name":"s","key":"k"},"configMapKeyRef":{"name":"c"}}}],"envFrom":[{},{"secretRef":{"name":"s"},"configMapRef":{}}]}],"ephemeralContainers":[{"envFrom":[{"configMapRef":{"name":"e"}}]}]},"status":{"phase":"Failed"}}`,
		`{"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"volumes":[{"secret":{"secretName":"a"},"configMap":{"name":"b"},"cephfs":{"secretRef":{"name":"c"}},"flexVolume":{"secretRef":null}}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p corev1.Pod
		if json.Unmarshal(data, &p) != nil {
			return
		}
		rec, err := transform(&p)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := rec.(*Pod)
		if !ok {
			t.Fatalf("transform returned %T", rec)
		}
		if again, _ := transform(got); again != got {
			t.Fatal("transform is not idempotent")
		}
		for _, names := range [][]string{got.Secrets, got.ConfigMaps} {
			if !slices.IsSorted(names) || slices.Contains(names, "") || len(slices.Compact(slices.Clone(names))) != len(names) {
				t.Fatalf("references not sorted, unique and non-empty: %q", names)
			}
		}
		if got.ServiceAccount == "" {
			t.Fatal("no ServiceAccount")
		}
		x, _ := newTestIndex()
		if err := x.pods.Add(got); err != nil {
			return // a pod the API server would refuse (no name): the informer never sees it
		}
		check := func(kind, name string) {
			use, err := x.Check(waiter(saGVK, got.Namespace, name), schema.GroupKind{Kind: kind}, got.Namespace, name, "")
			if err != nil {
				t.Fatal(err)
			}
			if found := slices.Contains(use.Pods, got); found != got.Counts() {
				t.Fatalf("%s %s: found the pod %v, want %v", kind, name, found, got.Counts())
			}
		}
		check("ServiceAccount", got.ServiceAccount)
		for _, s := range got.Secrets {
			check("Secret", s)
		}
		for _, c := range got.ConfigMaps {
			check("ConfigMap", c)
		}
		x.podChanged(t.Context(), got, nil)
	})
}

// FuzzBindingOf feeds bindings of any shape (anyone who may create one in
// their namespace writes them) through the transform and a lookup of the
// role they grant.
func FuzzBindingOf(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"metadata":{"namespace":"a","name":"b"},"roleRef":{"kind":"Role","name":"r"},"subjects":[{"kind":"ServiceAccount","name":"sa"},{"kind":"User","name":"system:serviceaccount:a:b"},{"kind":"Group","name":"system:serviceaccounts:a"},{"kind":"Group","name":"system:serviceaccounts"},{"kind":"User","name":"system:serviceaccount::"},{}]}`,
	} {
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, cluster bool) {
		x, _ := newTestIndex()
		var rec any
		var err error
		store := x.roleBindings
		if cluster {
			var b rbacv1.ClusterRoleBinding
			if json.Unmarshal(data, &b) != nil {
				return
			}
			rec, err = transform(&b)
			store = x.clusterRoleBindings
		} else {
			var b rbacv1.RoleBinding
			if json.Unmarshal(data, &b) != nil {
				return
			}
			rec, err = transform(&b)
		}
		if err != nil {
			t.Fatal(err)
		}
		b, ok := rec.(*Binding)
		if !ok {
			t.Fatalf("transform returned %T", rec)
		}
		if slices.Contains(b.Subjects, "") || !slices.IsSorted(b.Subjects) {
			t.Fatalf("subjects not sorted and non-empty: %q", b.Subjects)
		}
		if err := store.Add(b); err != nil {
			return
		}
		gk := schema.GroupKind{Group: rbacv1.GroupName, Kind: b.RoleKind}
		if Supported(gk) {
			if _, err := x.Check(waiter(crGVK, b.Namespace, b.RoleName), gk, b.Namespace, b.RoleName, b.Namespace); err != nil {
				t.Fatal(err)
			}
		}
		x.bindingChanged(t.Context(), b, nil)
	})
}
