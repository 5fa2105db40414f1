/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// TestWaitingOn is the controller's step family on the fake harness: a pod
// a step waits on that cannot run is PodWaiting with the engine's one pod
// judgement (the kubelet's words cleaned); one starting or running is not;
// a Job's pod that cannot run names the Job; an unused step's running pod
// is StillInUse, waiting and not stuck.
func TestWaitingOn(t *testing.T) {
	pod := func(name string, labels map[string]string, status corev1.PodStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops", Labels: labels}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: status}
	}
	waiting := func(reason, msg string) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}
	}
	running := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}}
	podRef := StepRef{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "ops", Name: "drain"}
	jobRef := StepRef{GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, Namespace: "ops", Name: "cleanup"}
	cases := map[string]struct {
		kind      string
		ref       StepRef
		objs      []runtime.Object
		wantCause string
		wantText  string
		stuck     bool
	}{
		"image pull": {kind: StepJob, ref: podRef, objs: []runtime.Object{pod("drain", nil, waiting("ImagePullBackOff", "Back-off pulling image \"nope\"\n\u202eevil"))},
			wantCause: CausePodWaiting, stuck: true, wantText: "Pod ops/drain: cannot run: container main ImagePullBackOff: Back-off pulling image \"nope\" evil"},
		"unschedulable": {kind: StepJob, ref: podRef, objs: []runtime.Object{pod("drain", nil, unschedulable)},
			wantCause: CausePodWaiting, stuck: true, wantText: "Pod ops/drain: cannot run: Pending, Unschedulable: 0/3 nodes are available"},
		"starting, unused step": {kind: StepUnused, ref: podRef, objs: []runtime.Object{pod("drain", nil, waiting("ContainerCreating", ""))},
			wantCause: CauseStillInUse, wantText: "Pod ops/drain: still runs (Pending) and uses it"},
		"running, unused step": {kind: StepUnused, ref: podRef, objs: []runtime.Object{pod("drain", nil, running)},
			wantCause: CauseStillInUse, wantText: "Pod ops/drain: still runs (Running) and uses it"},
		"job pod unschedulable": {kind: StepJob, ref: jobRef, objs: []runtime.Object{pod("cleanup-x1", map[string]string{"job-name": "cleanup"}, unschedulable)},
			wantCause: CausePodWaiting, stuck: true, wantText: "Pod ops/cleanup-x1: a pod of Job ops/cleanup, cannot run: Pending, Unschedulable: 0/3 nodes are available"},
		"job runs": {kind: StepJob, ref: jobRef, objs: []runtime.Object{pod("cleanup-x1", map[string]string{"job-name": "cleanup"}, running), pod("other", nil, unschedulable)},
			wantCause: CauseJobRunning, wantText: "Job ops/cleanup: runs (1 active pod(s))"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, _ := fakeExplainer(t, testNow, tc.objs...)
			f, stuck, ok := e.WithoutRemovalDryRun().WaitingOn(context.Background(), tc.kind, tc.ref)
			if !ok || f.Cause != tc.wantCause || stuck != tc.stuck || Sentence(f) != tc.wantText {
				t.Errorf("WaitingOn = %s %q (stuck %t, ok %t); want %s %q (stuck %t)", f.Cause, Sentence(f), stuck, ok, tc.wantCause, tc.wantText, tc.stuck)
			}
		})
	}
}

// TestShortenCutsRunes: the controller's diagnosis.message is cut to the
// CRD's maxLength in characters, never inside one.
func TestShortenCutsRunes(t *testing.T) {
	s := strings.Repeat("é", 600)
	got := Shorten(s, 512)
	if !utf8.ValidString(got) || utf8.RuneCountInString(got) != 512 || !strings.HasSuffix(got, "…") {
		t.Errorf("Shorten(600 × é, 512) = %d runes, valid %t", utf8.RuneCountInString(got), utf8.ValidString(got))
	}
	if got := Shorten("short", 512); got != "short" {
		t.Errorf("Shorten(short) = %q", got)
	}
}

// TestControllerNoAllClearWithoutEvidence: the controller's diagnosis
// (status.blockedObjects, its Event, teardown_blocked_objects) holds the
// rule explain does. An object a step waits on, or the guarded object's
// other finalizer, with no blocker and no evidence of progress (its owner
// runs, nothing changed since the deletion) is the root cause Stalled, a
// blocker that says what was checked; the same object with a condition
// changed a minute ago is progressing, and not called stuck.
func TestControllerNoAllClearWithoutEvidence(t *testing.T) {
	const fin = "buckets.example.com/cleanup"
	operator := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "bucket-operator", Namespace: "ops"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "example.com/bucket-operator:v1", Command: []string{"/bucket-operator"}}}}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	bucket := func(changed time.Duration) *unstructured.Unstructured {
		m := deleting("shop", "photos", time.Hour, fin)
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Bucket"}}
		u.SetNamespace(m.Namespace)
		u.SetName(m.Name)
		u.SetUID(m.UID)
		u.SetFinalizers(m.Finalizers)
		u.SetDeletionTimestamp(m.DeletionTimestamp)
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "bucket-operator", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"` + fin + `\"":{}}}}`)}})
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "False", "reason": "Deleting",
			"lastTransitionTime": testNow.Add(-changed).Format(time.RFC3339)}}, "status", "conditions")
		return u
	}
	ref := StepRef{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Bucket"}, Namespace: "shop", Name: "photos"}
	cases := map[string]struct {
		changed time.Duration
		stuck   bool
	}{
		"nothing changed since the deletion": {changed: 3 * time.Hour, stuck: true},
		"a condition changed a minute ago":   {changed: time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, _ := fakeExplainer(t, testNow, ns, operator, bucket(tc.changed))
			e = e.WithoutRemovalDryRun()
			f, stuck, ok := e.WaitingOn(context.Background(), StepDelete, ref)
			if stuck != tc.stuck || ok != tc.stuck {
				t.Errorf("WaitingOn = %s %q (stuck %t, ok %t); want stuck %t", f.Cause, Sentence(f), stuck, ok, tc.stuck)
			}
			roots := e.RootBlockers(context.Background(), ref)
			if !tc.stuck {
				if len(roots) > 0 {
					t.Errorf("RootBlockers of a progressing deletion = %s %q, want none", roots[0].Cause, Sentence(roots[0]))
				}
				return
			}
			if f.Cause != CauseStalled || f.Severity != SeverityBlocker || !strings.Contains(f.Message, "checked: ") {
				t.Errorf("WaitingOn = %s (%s) %q; want a Stalled blocker that says what was checked", f.Cause, f.Severity, Sentence(f))
			}
			if len(roots) != 1 || roots[0].Cause != CauseStalled {
				t.Errorf("RootBlockers = %v, want one Stalled", roots)
			}
		})
	}
}
