/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestSplitTargetArgs(t *testing.T) {
	cases := []struct {
		args      []string
		typ, name string
		wantErr   bool
	}{
		{[]string{"ns/shop"}, "ns", "shop", false},
		{[]string{"configmap", "x"}, "configmap", "x", false},
		{[]string{"widgets.example.com/w1"}, "widgets.example.com", "w1", false},
		{[]string{"shop"}, "", "", true},
		{[]string{"ns/", "x"}, "", "", true},
		{[]string{"a", "b", "c"}, "", "", true},
	}
	for _, c := range cases {
		typ, name, err := splitTargetArgs(c.args)
		if typ != c.typ || name != c.name || (err != nil) != c.wantErr {
			t.Errorf("splitTargetArgs(%v) = %q, %q, %v", c.args, typ, name, err)
		}
	}
}

func TestGuardedRemoval(t *testing.T) {
	got, err := guardedRemoval("42", 1, "example.com/x", false, "audit")
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},{"op":"test","path":"/metadata/finalizers/1","value":"example.com/x"},{"op":"remove","path":"/metadata/finalizers/1"},{"op":"add","path":"/metadata/annotations","value":{"teardown.dev/released-finalizer":"audit"}}]`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("guardedRemoval (-want +got):\n%s", diff)
	}
	got, _ = guardedRemoval("42", 0, "example.com/x", true, "audit")
	var ops []map[string]any
	_ = json.Unmarshal(got, &ops)
	if ops[3]["path"] != "/metadata/annotations/teardown.dev~1released-finalizer" {
		t.Errorf("annotation op = %v", ops[3])
	}
}

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
			if got := objectBlocker(c.kind, c.obj, now); got != c.want {
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
			if got := namespaceBlocker(c.ns, now); got != c.want {
				t.Errorf("namespaceBlocker = %q, want %q", got, c.want)
			}
		})
	}
}

func TestBuildPlanPure(t *testing.T) {
	item := func(name string, uid types.UID, owners ...metav1.OwnerReference) metaItem {
		return metaItem{Res: apiResource{Kind: "ConfigMap"}, Obj: metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, OwnerReferences: owners}}}
	}
	ref := func(uid types.UID) metav1.OwnerReference { return metav1.OwnerReference{UID: uid} }
	root := item("root", "r")
	items := []metaItem{root, item("a", "a", ref("r")), item("b", "b", ref("a")), item("cycle", "c", ref("b"), ref("c"))}
	rep := buildPlan(root, items, cascadeBackground, nil)
	if rep.Summary.Deleted != 4 {
		t.Errorf("summary = %+v, want 4 deleted (cycles visited once)", rep.Summary)
	}
}

func TestMarkStuck(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	row := func(name string, deleted time.Duration) StatusRow {
		return StatusRow{Object: ObjectRef{Kind: "Pod", Name: name}, DeletionTimestamp: metav1.Time{Time: now.Add(-deleted)}}
	}
	rep := &StatusReport{Items: []StatusRow{
		row("old", 10*time.Minute),
		row("recent", time.Minute),
		// A pod inside its grace period has a deletionTimestamp ahead.
		row("in-grace", -20*time.Minute),
	}}
	markStuck(rep, now, 0)
	if rep.Stuck != 0 || rep.StuckAfter != "" || stuckExit(rep) != nil {
		t.Fatalf("without a threshold nothing is stuck: %+v", rep)
	}
	markStuck(rep, now, 5*time.Minute)
	var got []string
	for _, it := range rep.Items {
		if it.Stuck {
			got = append(got, it.Object.Name)
		}
	}
	if diff := cmp.Diff([]string{"old"}, got); diff != "" {
		t.Errorf("stuck (-want +got):\n%s", diff)
	}
	if rep.Stuck != 1 || rep.StuckAfter != "5m" || stuckExit(rep) != errBlocked {
		t.Errorf("report = %d stuck after %q, exit %v", rep.Stuck, rep.StuckAfter, stuckExit(rep))
	}
	for d, want := range map[time.Duration]string{5 * time.Minute: "5m", 90 * time.Second: "1m30s", time.Hour: "1h", 90 * time.Minute: "1h30m", 30 * time.Second: "30s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRBACGrant(t *testing.T) {
	cases := []struct {
		sa, ns string
		gvr    schema.GroupVersionResource
		want   string
	}{
		{"op", "shop", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			"kubectl create role op-finalizers -n shop --verb=patch,update --resource=configmaps && kubectl create rolebinding op-finalizers -n shop --role=op-finalizers --serviceaccount=ops:op"},
		{"op", "", schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"},
			"kubectl create clusterrole op-finalizers --verb=patch,update --resource=volumeattachments.storage.k8s.io && kubectl create clusterrolebinding op-finalizers --clusterrole=op-finalizers --serviceaccount=ops:op"},
		{"default", "shop", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			"give the owner a ServiceAccount of its own (it runs as ops/default, shared by every pod there that names none), then grant that one patch and update on configmaps"},
	}
	for _, c := range cases {
		if got := rbacGrant("ops", c.sa, c.gvr, c.ns); got != c.want {
			t.Errorf("rbacGrant(%s, %s) = %q, want %q", c.sa, c.gvr, got, c.want)
		}
	}
}
