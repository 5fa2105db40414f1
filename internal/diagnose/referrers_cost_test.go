/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/diagnose/kube/kubefake"
)

// TestReferrersOneListPerKind: family 2 finds the objects that name each
// target from one list per kind and namespace that the run holds, never a
// request per object. n CephFilesystems, each named by its own
// CephFilesystemSubVolumeGroup (rook#14171), are explained on one Cluster,
// as status and the controller's pass do: each is InUseBy its group, the
// group's kind is listed once, and the requests that are not about one
// target (its GET, its removal's dry-run) are the same for 2 targets and 8.
func TestReferrersOneListPerKind(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprintf("bulk=%t", bulk), func(t *testing.T) {
			few, fewLists := referrerRequests(t, 2, bulk)
			many, manyLists := referrerRequests(t, 8, bulk)
			if fewLists != 1 || manyLists != 1 {
				t.Errorf("the referrers' kind was listed %d times for 2 targets, %d for 8; want once", fewLists, manyLists)
			}
			if len(many) != len(few) {
				t.Errorf("requests not about one target: %d for 2 targets, %d for 8\n2: %s\n8: %s", len(few), len(many), strings.Join(few, ", "), strings.Join(many, ", "))
			}
		})
	}
}

// referrerRequests explains n named CephFilesystems on one Cluster and
// returns the requests sent that are not about one target, and how many
// lists of the referrers' kind.
func referrerRequests(t *testing.T, n int, bulk bool) ([]string, int) {
	t.Helper()
	var objs []runtime.Object
	parse := func(doc string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("fixture: %v\n%s", err, doc)
		}
		return u
	}
	objs = append(objs, parse(runningOperator))
	var targets []*unstructured.Unstructured
	for i := range n {
		u := parse(fmt.Sprintf(`{apiVersion: ceph.rook.io/v1, kind: CephFilesystem, metadata: {name: fs-%d, namespace: rook-ceph, uid: fs-%d, deletionTimestamp: %q, finalizers: [cephfilesystem.ceph.rook.io]}, spec: {metadataServer: {activeCount: 1}}}`,
			i, i, familyNow.Add(-time.Hour).Format(time.RFC3339)))
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: u.GetAPIVersion(), FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{".":{},"v:\"cephfilesystem.ceph.rook.io\"":{}}}}`)}})
		targets = append(targets, u)
		objs = append(objs, u, parse(fmt.Sprintf(`{apiVersion: ceph.rook.io/v1, kind: CephFilesystemSubVolumeGroup, metadata: {name: svg-%d, namespace: rook-ceph, uid: svg-%d}, spec: {filesystemName: fs-%d}}`, i, i, i)))
	}
	c, f := kubefake.New(t, objs...)
	if bulk {
		c.Bulk()
	}
	for i, u := range targets {
		gvk := u.GroupVersionKind()
		rep, err := NewExplainer(c, familyNow).Explain(context.Background(), Target{GVR: gvk.GroupVersion().WithResource("cephfilesystems"), GVK: gvk,
			Namespaced: true, Namespace: u.GetNamespace(), Name: u.GetName()})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("CephFilesystemSubVolumeGroup rook-ceph/svg-%d", i)
		if len(rep.RootBlockers) == 0 || rep.RootBlockers[0].Cause != CauseInUseBy || rep.RootBlockers[0].Object.String() != want {
			t.Fatalf("%s: root blockers %v, want InUseBy %s", u.GetName(), rootCauses(rep), want)
		}
	}
	var out []string
	lists := 0
	for _, a := range append(append(f.Kube.Actions(), f.Dynamic.Actions()...), f.Metadata.Actions()...) {
		if named, ok := a.(interface{ GetName() string }); ok && strings.HasPrefix(named.GetName(), "fs-") {
			continue // the target's own GET or removal dry-run
		}
		if a.GetVerb() == "list" && a.GetResource().Resource == "cephfilesystemsubvolumegroups" {
			lists++
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out, lists
}
