/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

func TestObjectBlocker(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	meta := func(fins []string, dts time.Time, ann map[string]string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Finalizers: fins, DeletionTimestamp: &metav1.Time{Time: dts}, Annotations: ann}
	}
	cases := []struct {
		name, kind string
		obj        *metav1.ObjectMeta
		want       string
	}{
		{"pod in grace", "Pod", meta(nil, now.Add(30*time.Second), nil), "in grace period (30s left)"},
		{"pod past grace", "Pod", meta(nil, now.Add(-time.Minute), nil), "past grace period: kubelet has not confirmed (node down?)"},
		{"foreground", "ConfigMap", meta([]string{"foregroundDeletion"}, now, nil), "foregroundDeletion: waiting for blocking dependents"},
		{"catalog", "PersistentVolumeClaim", meta([]string{"kubernetes.io/pvc-protection", "x.io/y"}, now, nil), "kubernetes.io/pvc-protection: waiting for pvc-protection controller (kube-controller-manager) (+1 more)"},
		{"unknown", "ConfigMap", meta([]string{"x.io/y"}, now, nil), "x.io/y: owner unknown (run explain)"},
		{"progress", "ConfigMap", meta([]string{"x.io/y"}, now, map[string]string{"progress.finalizer.teardown.dev/x.io_y": `{"finalizer":"x.io/y","state":"Retry","message":"boom","attempts":2,"updated":"2026-01-01T00:00:00Z","deadlineExceeded":true}`}),
			"x.io/y: Retry (attempt 2): boom [deadline exceeded]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ObjectBlocker(c.kind, c.obj, now); got != c.want {
				t.Errorf("objectBlocker = %q, want %q", got, c.want)
			}
		})
	}
}

func TestNamespaceBlocker(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ns := func(conds ...corev1.NamespaceCondition) *corev1.Namespace {
		return &corev1.Namespace{Status: corev1.NamespaceStatus{Conditions: conds}}
	}
	cond := func(typ, msg string) corev1.NamespaceCondition {
		return corev1.NamespaceCondition{Type: corev1.NamespaceConditionType(typ), Status: corev1.ConditionTrue, Message: msg}
	}
	cases := []struct {
		name string
		ns   *corev1.Namespace
		want string
	}{
		{"discovery", ns(cond(condDiscoveryFailure, "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: m.example.com/v1: stale GroupVersion discovery: m.example.com/v1")),
			"API discovery failing for m.example.com/v1 (unavailable APIService)"},
		{"webhook", ns(cond(condContentFailure, `failed calling webhook "w.example.com": dial tcp`)), "content deletion failing: webhook w.example.com"},
		{"finalizers", ns(cond(condFinalizersRemaining, "Some content in the namespace has finalizers remaining: b.io/x in 2 resource instances, a.io/y in 1 resource instances")),
			"content waits on finalizers a.io/y (1), b.io/x (2)"},
		{"remaining", ns(cond(condContentRemaining, "Some resources are remaining: pods. has 2 resource instances")), "content remaining: 2 pods"},
		{"no conditions", ns(), "no condition yet: namespace controller has not run"},
		{"no conditions for long", func() *corev1.Namespace {
			n := ns()
			n.DeletionTimestamp = &metav1.Time{Time: now.Add(-5 * time.Minute)}
			return n
		}(), "no condition after 5m: namespace controller not running (run explain)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NamespaceBlocker(c.ns, now); got != c.want {
				t.Errorf("namespaceBlocker = %q, want %q", got, c.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	target := ObjectRef{Kind: "ConfigMap", Namespace: "shop", Name: "bucket"}
	gone := &Owner{Component: "bucket-operator", State: OwnerMissing, Evidence: []string{"catalog: bucket-operator", "no Deployment named bucket-operator was found"}}
	cases := []struct {
		name string
		rep  *Report
		want string
	}{
		{"root blocker with the evidence", &Report{Target: target, RootBlockers: []Finding{
			{Cause: CauseOwnerGone, Catalog: "B1", Finalizer: "b.io/x", Object: &target, Owner: gone, Message: `bucket-operator owns "b.io/x" and does not look alive (missing)`},
			{Cause: CauseOrphanFinalizer, Catalog: "B5"}}},
			`b.io/x: FinalizerOwnerGone [B1]: bucket-operator owns "b.io/x" and does not look alive (missing); no Deployment named bucket-operator was found (+1 more)`},
		{"evidence already in the message, on another object", &Report{Target: target, RootBlockers: []Finding{
			{Cause: CauseOwnerGone, Catalog: "B1", Finalizer: "b.io/x", Object: &ObjectRef{Kind: "Pod", Namespace: "shop", Name: "p"}, Owner: gone,
				Message: "it is gone: no Deployment named bucket-operator was found"}}},
			"b.io/x: FinalizerOwnerGone [B1] Pod shop/p: it is gone: no Deployment named bucket-operator was found"},
		{"waiting on an owner alive", &Report{Target: target, Findings: []Finding{{Cause: CauseCleanupInProgress, Severity: SeverityWaiting, Finalizer: "b.io/x",
			Owner: &Owner{Component: "bucket-operator", State: OwnerAlive, Evidence: []string{"Deployment ops/bucket-operator has 1 of 1 replicas ready", "SubjectAccessReview: allowed"}}}}},
			"b.io/x: waiting for bucket-operator (alive: Deployment ops/bucket-operator has 1 of 1 replicas ready)"},
		{"waiting on an owner alive, with its progress record", &Report{Target: target, Findings: []Finding{{Cause: CauseCleanupInProgress, Severity: SeverityWaiting, Finalizer: "shop.teardown.dev/x",
			Progress: &record.Progress{Finalizer: "shop.teardown.dev/x", State: record.StatePending, Attempts: 3, Message: "step pods-gone: waiting until size(objects) == 0 (1 object(s) selected)"},
			Owner:    &Owner{Component: "Teardown (TeardownPolicy shop/x)", State: OwnerAlive, Evidence: []string{"Deployment teardown-system/teardown-controller has 2 of 2 replicas ready"}}}}},
			"shop.teardown.dev/x: step pods-gone: waiting until size(objects) == 0 (1 object(s) selected) (Pending, attempt 3); waiting for Teardown (TeardownPolicy shop/x) (alive: Deployment teardown-system/teardown-controller has 2 of 2 replicas ready)"},
		{"nothing to say", &Report{Target: target, Findings: []Finding{{Cause: "NotTerminating", Severity: SeverityInfo}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, Summary(c.rep)); diff != "" {
				t.Errorf("Summary (-want +got):\n%s", diff)
			}
		})
	}
}
