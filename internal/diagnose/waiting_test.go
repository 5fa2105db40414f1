/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestReferencesOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want []reference
	}{
		{"Cluster API's infrastructureRef", map[string]any{"spec": map[string]any{
			"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster", "name": "w1", "namespace": "c"}}},
			[]reference{{GK: schema.GroupKind{Group: "infrastructure.cluster.x-k8s.io", Kind: "AWSCluster"}, Version: "v1beta2", Namespace: "c", Name: "w1", Path: "spec.infrastructureRef"}}},
		{"Argo CD's status.resources, listed once", map[string]any{"status": map[string]any{
			"resources": []any{map[string]any{"version": "v1", "kind": "PersistentVolumeClaim", "namespace": "shop", "name": "data"}},
			"operationState": map[string]any{"syncResult": map[string]any{"resources": []any{
				map[string]any{"version": "v1", "kind": "PersistentVolumeClaim", "namespace": "shop", "name": "data"}}}}}},
			[]reference{{GK: schema.GroupKind{Kind: "PersistentVolumeClaim"}, Version: "v1", Namespace: "shop", Name: "data", Path: "status.resources[]", Managed: true}}},
		{"Flux's inventory", map[string]any{"status": map[string]any{"inventory": map[string]any{"entries": []any{
			map[string]any{"id": "shop_web_apps_Deployment", "v": "v1"}}}}},
			[]reference{{GK: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Version: "v1", Namespace: "shop", Name: "web", Path: "status.inventory.entries", Managed: true}}},
		{"a name without a kind, or a kind without a version, is no reference", map[string]any{"spec": map[string]any{
			"providerConfigRef": map[string]any{"name": "default"}, "secretRef": map[string]any{"kind": "Secret", "name": "s"}}},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := referencesOf(&unstructured.Unstructured{Object: tc.obj})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("referencesOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefusalPatterns(t *testing.T) {
	for _, tc := range []struct {
		msg                          string
		kind, name, namespace, quota string
	}{
		{`jobs.batch "ray-cluster-redis-cleanup" is forbidden: unable to create new content in namespace ray because it is being terminated`, "Job", "ray-cluster-redis-cleanup", "ray", ""},
		{`jobs.batch "cleanup" is forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=2, limited: count/jobs.batch=2`, "Job", "cleanup", "", "jobs"},
		{`pods "helm-delete-x" is forbidden: error looking up service account kube-system/helm: serviceaccount "helm" not found`, "Pod", "helm-delete-x", "", ""},
		{`the cleanup is in progress`, "", "", "", ""},
	} {
		var got [4]string
		if m := refusedRE.FindStringSubmatch(tc.msg); m != nil {
			got[0], got[1] = kindOfRefused(m[1]), m[2]
			if n := terminatingNSRE.FindStringSubmatch(m[3]); n != nil {
				got[2] = n[1]
			}
			if q := quotaRE.FindStringSubmatch(m[3]); q != nil {
				got[3] = q[1]
			}
		}
		if diff := cmp.Diff([4]string{tc.kind, tc.name, tc.namespace, tc.quota}, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.msg, diff)
		}
	}
}

func TestPlaceWaits(t *testing.T) {
	obj := &ObjectRef{Kind: "Application", Namespace: "argocd", Name: "shop"}
	owner := &Owner{Component: "Argo CD application controller", State: OwnerAlive}
	pvc := Finding{Cause: CauseWaitsOnObject, Severity: SeverityWaiting, Object: &ObjectRef{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "data"},
		Children: []Finding{{Cause: CausePVCInUse, Severity: SeverityBlocker, Object: &ObjectRef{Kind: "Pod", Namespace: "shop", Name: "db-0"}}}}
	listed := Finding{Cause: CauseWaitsOnObject, Severity: SeverityWaiting, Object: &ObjectRef{Kind: "Service", Namespace: "shop", Name: "db"}}
	inProgress := Finding{Cause: CauseCleanupInProgress, Severity: SeverityWaiting, Object: obj, Finalizer: "f"}
	rbac := Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityBlocker, Object: obj, Finalizer: "f", Message: "may not patch"}
	for _, tc := range []struct {
		name      string
		in        Finding
		waits     []Finding
		cause     string
		severity  string
		rootCause []string
	}{
		{"wait that blocks: it is the root", inProgress, []Finding{pvc}, CauseOwnerWaitingOn, SeverityBlocker, []string{CausePVCInUse}},
		{"wait that blocks beside RBAC: first, RBAC beside", rbac, []Finding{pvc}, CauseOwnerWaitingOn, SeverityBlocker, []string{CausePVCInUse, CauseOwnerLacksRBAC}},
		{"RBAC the only thing blocking: it stays the cause", rbac, []Finding{listed}, CauseOwnerLacksRBAC, SeverityBlocker, []string{CauseOwnerLacksRBAC}},
		{"nothing blocks: waiting on what it names", inProgress, []Finding{listed}, CauseOwnerWaitingOn, SeverityWaiting, nil},
		{"nothing found: unchanged", inProgress, nil, CauseCleanupInProgress, SeverityWaiting, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := tc.in
			placeWaits(&fd, owner, tc.waits)
			var roots []string
			for _, r := range MarkRoots([]Finding{fd}) {
				roots = append(roots, r.Cause)
			}
			if diff := cmp.Diff([]any{tc.cause, tc.severity, tc.rootCause}, []any{fd.Cause, fd.Severity, roots}); diff != "" {
				t.Errorf("cause, severity, roots (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRankRoots(t *testing.T) {
	roots := []Finding{{Cause: CauseOwnerLacksRBAC, Finalizer: "a"}, {Cause: CauseOwnerGone, Finalizer: "b"}, {Cause: CauseOwnerLacksRBAC, Finalizer: "c"}, {Cause: CausePVCInUse, Finalizer: "d"}}
	var got []string
	for _, r := range rankRoots(roots) {
		got = append(got, r.Finalizer)
	}
	if diff := cmp.Diff([]string{"b", "d", "a", "c"}, got); diff != "" {
		t.Errorf("rankRoots (-want +got):\n%s", diff)
	}
}
