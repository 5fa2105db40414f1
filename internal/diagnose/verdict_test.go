/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// TestNoAllClearWithoutEvidence: a deletion with no blocker is PROGRESSING
// only on evidence (a bounded wait with its deadline, a change since the
// deletion began); one that only looks progressing (an owner that runs, a
// Warning that recurs, a change from before the deletion, a retry long
// overdue) is STALLED, or BLOCKED, never PROGRESSING.
func TestNoAllClearWithoutEvidence(t *testing.T) {
	const fin = "buckets.example.com/cleanup"
	operator := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "bucket-operator", Namespace: "ops"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "example.com/bucket-operator:v1", Command: []string{"/bucket-operator"}}}}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	managed := []metav1.ManagedFieldsEntry{{Manager: "bucket-operator", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"` + fin + `\"":{}}}}`)}}
	// bucket is a custom resource deleted 10 minutes ago, with conditions.
	bucket := func(conds ...map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Bucket"}}
		m := deleting("shop", "photos", 10*time.Minute, fin)
		m.ManagedFields = managed
		u.SetNamespace(m.Namespace)
		u.SetName(m.Name)
		u.SetUID(m.UID)
		u.SetFinalizers(m.Finalizers)
		u.SetDeletionTimestamp(m.DeletionTimestamp)
		u.SetManagedFields(m.ManagedFields)
		var cs []any
		for _, c := range conds {
			cs = append(cs, c)
		}
		if len(cs) > 0 {
			_ = unstructured.SetNestedSlice(u.Object, cs, "status", "conditions")
		}
		return u
	}
	cond := func(typ, status, reason string, ago time.Duration) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "lastTransitionTime": testNow.Add(-ago).Format(time.RFC3339)}
	}
	// configMap carries a pkg/finalizer progress record of fin.
	withProgress := func(next time.Time) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: deleting("shop", "settings", 10*time.Minute, fin)}
		cm.ManagedFields = managed
		p, _ := json.Marshal(record.Progress{Finalizer: fin, State: "Pending", Message: "waiting for the bucket to empty", Attempts: 4,
			Updated: testNow.Add(-time.Minute), NextAttempt: &next})
		cm.Annotations = map[string]string{record.ProgressAnnotation(fin): string(p)}
		return cm
	}
	event := func(obj metav1.Object, kind, typ, reason string, ago time.Duration) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName() + "." + reason, Namespace: obj.GetNamespace()},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()},
			Type:           typ, Reason: reason, Message: reason + " from bucket-operator", Source: corev1.EventSource{Component: "bucket-operator"},
			LastTimestamp: metav1.Time{Time: testNow.Add(-ago)}}
	}
	gracePod := &corev1.Pod{ObjectMeta: deleting("shop", "web-0", -20*time.Second), Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	gracePod.DeletionGracePeriodSeconds = ptr.To[int64](30)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	// orphaning is a ConfigMap the garbage collector must release, on a
	// control plane whose kube-controller-manager shows no Lease.
	orphaning := func(ago time.Duration) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: deleting("shop", "legacy", ago, metav1.FinalizerOrphanDependents)}
	}
	fresh, old := bucket(cond("Ready", "False", "Deleting", time.Minute)), bucket(cond("Ready", "True", "Available", 3*time.Hour))
	plain := bucket()
	cases := map[string]struct {
		target   runtime.Object
		objs     []runtime.Object
		want     string
		evidence string // in ProgressEvidence, when PROGRESSING
	}{
		// Progressing normally.
		"pod inside its grace period": {target: gracePod, objs: []runtime.Object{ns, node, gracePod},
			want: VerdictProgressing, evidence: "inside its grace period until 2026-11-28T12:00:20Z"},
		"a handler retrying with its next attempt": {target: withProgress(testNow.Add(30 * time.Second)), objs: []runtime.Object{ns, operator, withProgress(testNow.Add(30 * time.Second))},
			want: VerdictProgressing, evidence: "next attempt at 2026-11-28T12:00:30Z"},
		"a condition that changed a minute ago": {target: fresh, objs: []runtime.Object{ns, operator, fresh},
			want: VerdictProgressing, evidence: "condition Ready=False (Deleting) changed 1m ago"},
		"a Normal Event from the owner since the deletion": {target: plain, objs: []runtime.Object{ns, operator, plain, event(plain, "Bucket", corev1.EventTypeNormal, "EmptyingBucket", 2*time.Minute)},
			want: VerdictProgressing, evidence: "Event EmptyingBucket from bucket-operator"},
		// Looks progressing, is not.
		"an owner that runs, and nothing else":         {target: plain, objs: []runtime.Object{ns, operator, plain}, want: VerdictStalled},
		"a condition that changed before the deletion": {target: old, objs: []runtime.Object{ns, operator, old}, want: VerdictStalled},
		"a retry long overdue": {target: withProgress(testNow.Add(-2 * time.Hour)), objs: []runtime.Object{ns, operator, withProgress(testNow.Add(-2 * time.Hour))},
			want: VerdictStalled},
		"the garbage collector, liveness unknown, past --gc-stall-after": {target: orphaning(time.Hour), objs: []runtime.Object{ns, orphaning(time.Hour)},
			want: VerdictBlocked}, // E2, not WAITING
		// Waiting: a bounded wait on an actor whose liveness is unknown.
		"the garbage collector, liveness unknown, inside --gc-stall-after": {target: orphaning(time.Minute), objs: []runtime.Object{ns, orphaning(time.Minute)},
			want: VerdictWaiting},
		"a Normal Event from before the deletion": {target: plain, objs: []runtime.Object{ns, operator, plain, event(plain, "Bucket", corev1.EventTypeNormal, "Provisioned", 2*time.Hour)},
			want: VerdictStalled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rep := explainFake(t, testNow, tc.target, tc.objs...)
			var b strings.Builder
			RenderReport(&b, rep, Palette{})
			if rep.Verdict != tc.want {
				t.Fatalf("verdict = %q, want %q\n%s", rep.Verdict, tc.want, b.String())
			}
			if tc.want == VerdictProgressing && !strings.Contains(strings.Join(rep.ProgressEvidence, "\n"), tc.evidence) {
				t.Errorf("evidence = %q, want one with %q", rep.ProgressEvidence, tc.evidence)
			}
			if tc.want == VerdictWaiting && !strings.Contains(b.String(), "WAITING: no blocker found yet") {
				t.Errorf("a waiting report must say whose liveness is unknown:\n%s", b.String())
			}
			if tc.want == VerdictStalled && (len(rep.Checked) == 0 || !strings.Contains(b.String(), "STALLED") || strings.Contains(b.String(), "PROGRESSING") || strings.Contains(b.String(), "WAITING")) {
				t.Errorf("a stalled report must say so and what was checked:\n%s", b.String())
			}
		})
	}
}
