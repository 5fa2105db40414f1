/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestConditionFails(t *testing.T) {
	for _, tc := range []struct {
		typ, status, reason, msg string
		want                     bool
	}{
		{"DeletionError", "", "", "cluster not found", true}, // Argo CD writes no status
		{"DeletionError", "False", "", "", false},
		{"DeleteFailed", "True", "", "", true},
		{"FinalizerError", "True", "", "", true},
		{"Terminating", "True", "InstanceDeletionFailed", "", true},
		{"Terminating", "True", "InstanceDeletionInProgress", "", false},
		{"Synced", "False", "ReconcileError", "delete failed: AccessDenied", true},
		{"Ready", "False", "Deleting", "", false},
		{"Ready", "False", "", "unable to reach the backend", true},
		{"Ready", "True", "Available", "", false},
		{"ComparisonError", "", "", "x", false},
		// An external target the owner cannot reach (issue 17).
		{"Ready", "False", "Deleting", "cluster workload-2 unreachable: dial tcp 10.0.4.17:6443: i/o timeout", true},
		{"Ready", "False", "ClusterNotReachable", "cluster is not reachable", true},
		{"Synced", "False", "ReconcileError", "cannot delete bucket: AccessDenied", true},
		{"Ready", "False", "Progressing", "waiting for the cluster to be deleted", false},
	} {
		if got := conditionFails(tc.typ, tc.status, tc.reason, tc.msg); got != tc.want {
			t.Errorf("conditionFails(%q, %q, %q, %q) = %v, want %v", tc.typ, tc.status, tc.reason, tc.msg, got, tc.want)
		}
	}
}

func TestFailingConditionNewest(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError", "message": "old", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		map[string]any{"type": "DeletionError", "message": "new\nline\u202e", "lastTransitionTime": "2026-01-02T00:00:00Z"},
		map[string]any{"type": "Ready", "status": "True"},
		"not a condition",
	}}}}
	got, ok := failingCondition(u)
	if !ok {
		t.Fatal("no failing condition")
	}
	if diff := cmp.Diff("condition DeletionError: new line", got.String()); diff != "" {
		t.Errorf("statement (-want +got):\n%s", diff)
	}
}

// FuzzFailingCondition: status conditions are written by others; reading
// them never panics and never repeats more than maxSaid bytes of their
// text, nor a control character.
func FuzzFailingCondition(f *testing.F) {
	f.Add([]byte(`{"status":{"conditions":[{"type":"DeletionError","message":"boom"}]}}`))
	f.Add([]byte(`{"status":{"conditions":[{"type":"Synced","status":"False","reason":"ReconcileError","message":"x","lastTransitionTime":"bad"}]}}`))
	f.Add([]byte(`{"status":{"conditions":"nope"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		obj := map[string]any{}
		if err := json.Unmarshal(data, &obj); err != nil {
			return
		}
		u := &unstructured.Unstructured{Object: obj}
		st, ok := failingCondition(u)
		if !ok {
			return
		}
		if len(st.Text) > maxSaid || !utf8.ValidString(st.Text) || strings.ContainsAny(st.Text, "\n\r\x1b\u202e") {
			t.Errorf("unsafe text %q", st.Text)
		}
	})
}

// FuzzWorkloadWhy: a workload's pods and a package's conditions are written
// by others (kubelets, schedulers, Crossplane); what explain repeats of them
// stays bounded and free of control characters.
func FuzzWorkloadWhy(f *testing.F) {
	f.Add([]byte(`{"spec":{"nodeName":"n1"},"status":{"phase":"Running","containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off"}},"lastState":{"terminated":{"exitCode":1,"reason":"Error"}},"restartCount":7}]}}`))
	f.Add([]byte(`{"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available"}]}}`))
	f.Add([]byte(`{"status":{"conditions":[{"type":"Healthy","status":"False","reason":"UnhealthyPackageRevision","message":"x\n\u202ey"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(what, s string, max int) {
			if len(s) > max || !utf8.ValidString(s) || strings.ContainsAny(s, "\n\r\x1b\u202e") {
				t.Errorf("%s: unsafe text %q", what, s)
			}
		}
		pod := &corev1.Pod{}
		if err := json.Unmarshal(data, pod); err == nil {
			check("podWhy", podWhy(pod), 1024)
		}
		obj := map[string]any{}
		if err := json.Unmarshal(data, &obj); err == nil {
			for _, s := range notTrue(&unstructured.Unstructured{Object: obj}, "Provider p", "Healthy", "Installed") {
				check("notTrue", s, 512)
			}
		}
	})
}

func TestNameMatches(t *testing.T) {
	for _, tc := range []struct {
		from  string
		names []string
		want  bool
	}{
		{"argocd-application-controller", []string{"Argo CD application controller", "argocd-application-controller"}, true},
		{"cert-manager-orders", []string{"cert-manager"}, true},
		{"kubelet", []string{"cert-manager"}, false},
		{"", []string{"x"}, false},
	} {
		if got := nameMatches(tc.from, tc.names); got != tc.want {
			t.Errorf("nameMatches(%q, %v) = %v, want %v", tc.from, tc.names, got, tc.want)
		}
	}
}

// TestRBACBeside: a running owner's missing right, found before the owner's
// own words, moves beside the failure it reports, worded as a later root.
func TestRBACBeside(t *testing.T) {
	ref := &ObjectRef{Kind: "Bucket", Namespace: "shop", Name: "invoices"}
	owner := &Owner{Component: "provider-aws-s3", State: OwnerAlive}
	fd := Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityBlocker, Object: ref, Finalizer: "finalizer.managedresource.crossplane.io", Owner: owner,
		Message:  `provider-aws-s3 owns "finalizer.managedresource.crossplane.io" and is running, but cannot remove it: its ServiceAccount x/y may not patch or update buckets shop/invoices (SubjectAccessReview: patch denied)`,
		FixOwner: "operator packaging (its RBAC); cluster admin", Remedy: "grant it", Leaks: "the bucket"}
	want := Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityBlocker, Object: ref, Finalizer: fd.Finalizer, Owner: owner,
		Message:  `provider-aws-s3 is running, but even once what it reports is fixed it cannot remove "finalizer.managedresource.crossplane.io": its ServiceAccount x/y may not patch or update buckets shop/invoices (SubjectAccessReview: patch denied)`,
		FixOwner: fd.FixOwner, Remedy: "grant it", Leaks: "the bucket"}
	if diff := cmp.Diff(want, rbacBeside(fd)); diff != "" {
		t.Errorf("rbacBeside (-want +got):\n%s", diff)
	}
}
