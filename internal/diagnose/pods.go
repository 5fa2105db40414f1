/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Causes of this family (see report.go).
const (
	CauseJobTrackingPending = "JobTrackingPending" // C8
	CausePodInGracePeriod   = "PodInGracePeriod"   // D1
	CausePodOnNotReadyNode  = "PodOnNotReadyNode"  // D2
	CausePodOnMissingNode   = "PodOnMissingNode"   // D2
	CausePodNotKilled       = "PodPastGracePeriod" // D3
)

// podsEntries are the finalizers of pods and their groups (C8, C13).
var podsEntries = []Entry{
	{Finalizer: "batch.kubernetes.io/job-tracking", Kinds: []string{"Pod"}, Component: "Job controller (kube-controller-manager)", BuiltIn: true, ID: "C8",
		Remedy: "fix the webhook or validation that rejects the pod update; the Job controller then removes it",
		Leaks:  "only the Job's accounting of this pod", Strip: StripLowRisk,
		Resources: []string{"pods"},
		Check:     func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.jobTracking(ctx, fd, s.Obj) }},
	{Finalizer: "scheduling.k8s.io/podgroup-protection", Component: "podgroupprotection controller (kube-controller-manager)", BuiltIn: true, ID: "C13",
		Remedy: "let the member pods finish, or delete them", Strip: StripRisky},
}

// podFindings: D1–D3.
func (e *Explainer) podFindings(ctx context.Context, obj metav1.Object) []Finding {
	pod, err := e.c.Pod(ctx, obj.GetNamespace(), obj.GetName())
	if err != nil || pod.DeletionTimestamp == nil {
		return nil
	}
	// A finished pod, or one deleted with grace 0 (by its kubelet, or
	// forced), waits on nobody but its finalizers: the API server removes it
	// as soon as they are gone.
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
		(pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0) {
		return nil
	}
	ref := ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	if e.now.Before(pod.DeletionTimestamp.Time) {
		return []Finding{{Cause: CausePodInGracePeriod, Catalog: "D1", Severity: SeverityWaiting, Object: &ref,
			Message: fmt.Sprintf("still inside its grace period: %s left", Age(pod.DeletionTimestamp.Sub(e.now))), Remedy: "wait"}}
	}
	past := Age(e.now.Sub(pod.DeletionTimestamp.Time))
	if pod.Spec.NodeName == "" {
		return nil
	}
	node, err := e.c.Node(ctx, pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return []Finding{{Cause: CausePodOnMissingNode, Catalog: "D2", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("past its grace period by %s on node %s, which no longer exists", past, pod.Spec.NodeName),
			FixOwner: "cluster operator", Remedy: "the pod garbage collector (kube-controller-manager) removes pods of deleted nodes; check it runs, or force-delete the pod (kubectl delete pod --grace-period=0 --force)"}}
	}
	if err != nil {
		return nil
	}
	ready := corev1.ConditionUnknown
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status
		}
	}
	if ready != corev1.ConditionTrue {
		warn := ""
		for _, r := range pod.OwnerReferences {
			if r.Kind == "StatefulSet" {
				warn = " Force-deleting a StatefulSet pod risks two pods with the same identity."
			}
		}
		return []Finding{{Cause: CausePodOnNotReadyNode, Catalog: "D2", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("past its grace period by %s; node %s is Ready=%s, so no kubelet confirms the pod stopped", past, node.Name, ready),
			FixOwner: "node or infrastructure owner",
			Remedy:   fmt.Sprintf("recover the node; if it is confirmed dead, taint it: kubectl taint node %s node.kubernetes.io/out-of-service=nodeshutdown:NoExecute (or delete the Node object); last resort: kubectl delete pod --grace-period=0 --force.%s", node.Name, warn),
			Leaks:    "volumes may stay attached to the dead node until it is tainted out-of-service"}}
	}
	d3 := Finding{Cause: CausePodNotKilled, Catalog: "D3", Severity: SeverityBlocker, Object: &ref,
		Message:  fmt.Sprintf("past its grace period by %s on Ready node %s: the kubelet cannot stop it (runtime or volume teardown)", past, node.Name),
		FixOwner: "node or storage owner", Remedy: "read the pod's events and the kubelet's logs on the node; a forced delete only hides the problem"}
	e.kubeletSays(ctx, pod, &d3)
	return []Finding{d3}
}

// jobTracking: C8. The Job controller removes batch.kubernetes.io/job-tracking
// once it has counted the finished (or deleted) pod in its Job's status; it
// also removes it from pods whose Job is gone.
func (e *Explainer) jobTracking(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause, fd.Catalog = CauseJobTrackingPending, "C8"
	fd.Owner = e.builtInOwner(ctx, "Job controller (kube-controller-manager)")
	fd.FixOwner = "cluster operator (kube-controller-manager's Job controller)"
	release := fmt.Sprintf("kubectl teardown release pod/%s -n %s --finalizer %s --reason '...'", obj.GetName(), obj.GetNamespace(), fd.Finalizer)
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	phase := "unknown"
	if pod, err := e.c.Pod(ctx, obj.GetNamespace(), obj.GetName()); err == nil {
		phase = string(pod.Status.Phase)
	}
	var jobRef *metav1.OwnerReference
	for _, r := range obj.GetOwnerReferences() {
		if r.Kind == "Job" && strings.HasPrefix(r.APIVersion, "batch/") && r.Controller != nil && *r.Controller {
			r := r
			jobRef = &r
		}
	}
	stalled := func(what string) {
		fd.Severity = SeverityWaiting
		fd.Message = fmt.Sprintf("%s (pod phase %s, deleting for %s)", what, phase, Age(since))
		fd.Remedy = "wait; if it does not go, check kube-controller-manager's Job controller and webhooks on pod updates"
		if since > DefaultGCStallAfter || fd.Owner.State == OwnerDown {
			fd.Severity = SeverityBlocker
			fd.Message = fmt.Sprintf("%s, but it has not for %s (pod phase %s; %s): the Job controller is down or cannot update the pod", what, Age(since), phase, fd.Owner.Evidence[0])
			fd.Remedy = "fix kube-controller-manager's Job controller (or the webhook rejecting pod updates, see the dry-run); for a finished Job only its accounting is at stake, so releasing is low risk: " + release
		}
	}
	if jobRef == nil {
		stalled("the pod has no owning Job; the Job controller removes the finalizer of such pods")
		return
	}
	job, err := e.c.Job(ctx, obj.GetNamespace(), jobRef.Name)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && job.UID != jobRef.UID):
		stalled(fmt.Sprintf("its Job %s is gone; the Job controller removes the finalizer of orphaned pods", jobRef.Name))
		return
	case err != nil:
		stalled(fmt.Sprintf("Job %s could not be read (%v); the Job controller removes the finalizer once it has counted the pod", jobRef.Name, err))
		return
	}
	counted := false
	if u := job.Status.UncountedTerminatedPods; u != nil {
		for _, uid := range append(append([]types.UID{}, u.Succeeded...), u.Failed...) {
			if uid == obj.GetUID() {
				counted = true
			}
		}
	}
	if job.Status.StartTime == nil && len(job.Status.Conditions) == 0 && !counted {
		// The Job controller stamps startTime (or a Suspended condition) on
		// its first sync, before any pod of the Job can finish.
		fd.Severity = SeverityBlocker
		fd.Owner.State = OwnerDown
		fd.Owner.Evidence = append(fd.Owner.Evidence, fmt.Sprintf("Job %s has no startTime and no condition: the Job controller never synced it", job.Name))
		fd.Message = fmt.Sprintf("the Job controller has never synced Job %s (no startTime, no condition), so it will not count this pod (phase %s) or remove the finalizer: it is not running", job.Name, phase)
		fd.Remedy = "run kube-controller-manager with the Job controller (check its --controllers flag); for a finished Job only its accounting is at stake, so releasing is low risk: " + release
		return
	}
	if counted {
		stalled(fmt.Sprintf("Job %s has counted the pod (status.uncountedTerminatedPods); the Job controller removes the finalizer next", job.Name))
		return
	}
	stalled(fmt.Sprintf("Job %s has not counted the pod yet; the Job controller removes the finalizer once it has", job.Name))
}
