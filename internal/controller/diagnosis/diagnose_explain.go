/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
)

// Causes the controller's diagnosis names itself, without the engine.
const (
	// CauseWebhookFailing: a webhook step's last call failed (unreachable,
	// refused, an error answer); the step's error says how.
	CauseWebhookFailing = "WebhookFailing"
	// CauseStepFailing: another step's last attempt failed.
	CauseStepFailing = "StepFailing"
	// CausePodWaiting: a pod the step waits on (a Job's, or one that uses
	// an unused step's target) cannot start: unschedulable, an image that
	// cannot be pulled, a crashing container.
	CausePodWaiting = "PodWaiting"
	// CauseStillInUse: the pods an unused step waits on run normally.
	CauseStillInUse = "StillInUse"
	// CauseNotDeleted: an object a wait step selects is not being deleted.
	CauseNotDeleted = "NotDeleted"
	// CauseJobRunning: a job step's Job runs, with no pod stuck.
	CauseJobRunning = "JobRunning"
	// CauseOutsideNamespace: the root cause lies outside a TeardownPolicy's
	// namespace, which its author may not read.
	CauseOutsideNamespace = "OutsideNamespace"
)

// maxDiagnosisMessage bounds diagnosis.message, as the CRD does.
const maxDiagnosisMessage = 512

// diagnosis is one pass's reading of what holds a guarded object.
type diagnosis struct {
	cause, catalog, message string
	blocker                 *teardownv1alpha1.ObjectReference
	// finalizer is the blocking finalizer, when the cause is about one.
	finalizer string
	// ownerNamespace is where the workload that should remove the
	// blocking finalizer runs, when the engine found it.
	ownerNamespace string
}

// same is true when d and o name the same root cause (an Event is emitted
// only when it changes).
func (d diagnosis) same(o diagnosis) bool {
	return d.cause == o.cause && d.catalog == o.catalog && refString(d.blocker) == refString(o.blocker)
}

func refString(r *teardownv1alpha1.ObjectReference) string {
	if r == nil {
		return ""
	}
	return r.APIVersion + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// explainer is one pass's access to the engine: one diagnose.Cluster, so
// every list it reads is read once for all the objects of the pass.
type explainer struct {
	cluster *diagnose.Cluster
	mapper  meta.RESTMapper
	now     time.Time
	// requests counts the engine's explanations (for the log).
	explained int
}

// diagnose finds the root cause of what the cleanup under key of obj waits
// on (w), and, when other finalizers than key remain on obj, of those. The
// first root cause found wins, in this order: a failing step, what the step
// waits on, the object's other finalizers; ok is false when nothing is
// found (a step working normally on objects that are not stuck).
func (x *explainer) diagnose(ctx context.Context, pol *policy.Policy, key string, gvk schema.GroupVersionKind, obj metav1.Object, w steps.Wait, hasWait bool) (diagnosis, bool) {
	if hasWait && w.Failure != "" {
		cause := CauseStepFailing
		if w.Action == steps.ActionWebhook {
			cause = CauseWebhookFailing
		}
		return diagnosis{cause: cause, message: w.Failure}, true
	}
	var found []diagnosis
	var fallback []diagnosis // waiting, not stuck: said only when nothing is
	if hasWait {
		for _, ref := range w.On {
			d, stuck, ok := x.explainWaitRef(ctx, ref, w.Action)
			switch {
			case !ok:
			case stuck:
				found = append(found, d)
			default:
				fallback = append(fallback, d)
			}
		}
	}
	if others := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == key }); len(found) == 0 && len(others) > 0 {
		found = append(found, x.explainObject(ctx, gvk, obj.GetNamespace(), obj.GetName(), key)...)
	}
	found = append(found, fallback...)
	if len(found) == 0 {
		return diagnosis{}, false
	}
	d := found[0]
	if n := len(found) - 1; n > 0 {
		d.message += fmt.Sprintf(" (+%d more)", n)
	}
	if pol.Ref.Kind == policy.KindNamespaced {
		d = tenantView(d, pol.Ref.Namespace, gvk, obj)
	}
	d.message = diagnose.Shorten(d.message, maxDiagnosisMessage)
	return d, true
}

// explainWaitRef explains one object a step waits on: the engine's root
// blockers when it is terminating; for a pod or a Job that is not, why it
// does not finish (stuck false when it is just running).
func (x *explainer) explainWaitRef(ctx context.Context, ref steps.WaitRef, action steps.Action) (d diagnosis, stuck, ok bool) {
	kube := x.cluster.Kube()
	switch {
	case ref.GVK.Group == "batch" && ref.GVK.Kind == "Job":
		return x.explainJob(ctx, ref)
	case ref.GVK.Group == "" && ref.GVK.Kind == "Pod":
		pod, err := kube.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return diagnosis{}, false, false
		}
		if pod.DeletionTimestamp == nil {
			if d, ok := podWaiting(pod); ok {
				return d, true, true
			}
			if action == steps.ActionUnused {
				return diagnosis{cause: CauseStillInUse, blocker: podRef(pod),
					message: fmt.Sprintf("Pod %s/%s still runs (%s) and uses it", pod.Namespace, pod.Name, pod.Status.Phase)}, false, true
			}
		}
	}
	roots := x.explainObject(ctx, ref.GVK, ref.Namespace, ref.Name, "")
	if len(roots) > 0 {
		return roots[0], true, true
	}
	if action == steps.ActionWait {
		apiVersion, kind := ref.GVK.ToAPIVersionAndKind()
		r := &teardownv1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: ref.Namespace, Name: ref.Name}
		return diagnosis{cause: CauseNotDeleted, blocker: r, message: fmt.Sprintf("%s %s/%s does not meet the wait step's condition", kind, ref.Namespace, ref.Name)}, false, true
	}
	return diagnosis{}, false, false
}

// explainObject runs the engine on one object and returns its root
// blockers, leaving out those about the finalizer skip (the policy's own).
func (x *explainer) explainObject(ctx context.Context, gvk schema.GroupVersionKind, namespace, name, skip string) []diagnosis {
	mapping, err := x.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil
	}
	t := diagnose.Target{GVR: mapping.Resource, GVK: gvk, Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace, Namespace: namespace, Name: name}
	x.explained++
	// No removal dry-run (B3): one request per finalizer; explain does it.
	rep, err := diagnose.NewExplainer(x.cluster, x.now).WithoutRemovalDryRun().Explain(ctx, t)
	if err != nil {
		return nil
	}
	var out []diagnosis
	for _, f := range rep.RootBlockers {
		if skip != "" && f.Finalizer == skip && f.Object != nil && f.Object.Name == name && f.Object.Namespace == namespace {
			continue
		}
		d := diagnosis{cause: f.Cause, catalog: f.Catalog, message: f.Message, finalizer: f.Finalizer}
		if f.Finalizer != "" {
			d.message = f.Finalizer + ": " + d.message
		}
		if f.Object != nil {
			d.blocker = &teardownv1alpha1.ObjectReference{APIVersion: f.Object.APIVersion, Kind: f.Object.Kind, Namespace: f.Object.Namespace, Name: f.Object.Name}
			d.message = f.Object.String() + ": " + d.message
		}
		if f.Owner != nil && f.Owner.Workload != nil {
			d.ownerNamespace = f.Owner.Workload.Namespace
		}
		out = append(out, d)
	}
	return out
}

// tenantView keeps a TeardownPolicy's diagnosis to its own namespace: the
// engine runs as the controller, which reads more than the policy's author
// may. A root cause about an object elsewhere becomes OutsideNamespace with
// no detail; one about an object of the namespace whose finalizer's owner
// runs elsewhere keeps the object and the finalizer (both the author's to
// read) and says no more of the owner.
func tenantView(d diagnosis, ns string, gvk schema.GroupVersionKind, obj metav1.Object) diagnosis {
	blockerInside := d.blocker == nil || d.blocker.Namespace == ns
	if blockerInside && (d.ownerNamespace == "" || d.ownerNamespace == ns) {
		return d
	}
	explain := fmt.Sprintf("a cluster admin can run: kubectl teardown explain %s %s", strings.ToLower(gvk.Kind), obj.GetName())
	if obj.GetNamespace() != "" { // a Namespace target has none
		explain += " -n " + obj.GetNamespace()
	}
	if blockerInside && d.blocker != nil && d.finalizer != "" {
		return diagnosis{cause: CauseOutsideNamespace, blocker: d.blocker, finalizer: d.finalizer,
			message: fmt.Sprintf("%s %s/%s: %s: the finalizer's owner runs outside namespace %s; %s", d.blocker.Kind, d.blocker.Namespace, d.blocker.Name, d.finalizer, ns, explain)}
	}
	return diagnosis{cause: CauseOutsideNamespace, message: fmt.Sprintf("the root cause lies outside namespace %s; %s", ns, explain)}
}

// explainJob says why a job step's Job has not finished: a pod that cannot
// start, else that it runs.
func (x *explainer) explainJob(ctx context.Context, ref steps.WaitRef) (diagnosis, bool, bool) {
	pods, err := x.cluster.Kube().CoreV1().Pods(ref.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + ref.Name})
	if err != nil && !apierrors.IsNotFound(err) {
		return diagnosis{}, false, false
	}
	active := 0
	if pods != nil {
		for i := range pods.Items {
			if d, ok := podWaiting(&pods.Items[i]); ok {
				d.message = fmt.Sprintf("Job %s/%s: %s", ref.Namespace, ref.Name, d.message)
				return d, true, true
			}
			if pods.Items[i].Status.Phase == corev1.PodRunning || pods.Items[i].Status.Phase == corev1.PodPending {
				active++
			}
		}
	}
	r := &teardownv1alpha1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: ref.Namespace, Name: ref.Name}
	return diagnosis{cause: CauseJobRunning, blocker: r, message: fmt.Sprintf("Job %s/%s runs (%d active pod(s))", ref.Namespace, ref.Name, active)}, false, true
}

// podWaiting says why a pod that is not being deleted cannot run: a
// container waiting for a reason other than starting (ImagePullBackOff,
// CrashLoopBackOff, CreateContainerConfigError), or unschedulable.
func podWaiting(pod *corev1.Pod) (diagnosis, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return diagnosis{cause: CausePodWaiting, blocker: podRef(pod),
				message: fmt.Sprintf("Pod %s/%s is unschedulable: %s", pod.Namespace, pod.Name, c.Message)}, true
		}
	}
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, s := range statuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			msg := fmt.Sprintf("Pod %s/%s: container %s waiting: %s", pod.Namespace, pod.Name, s.Name, w.Reason)
			if w.Message != "" {
				msg += ": " + w.Message
			}
			return diagnosis{cause: CausePodWaiting, blocker: podRef(pod), message: msg}, true
		}
	}
	return diagnosis{}, false
}

func podRef(pod *corev1.Pod) *teardownv1alpha1.ObjectReference {
	return &teardownv1alpha1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}
}
