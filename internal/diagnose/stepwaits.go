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
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/signals"
)

// Causes of this family: what a pending step of a Teardown policy waits on,
// which the controller's diagnosis (status.blockedObjects, Events,
// teardown_blocked_objects) asks the engine about (WaitingOn, StepFailed).
const (
	// CauseWebhookFailing: a webhook step's last call failed (unreachable,
	// refused, an error answer); the step's error says how.
	CauseWebhookFailing = "WebhookFailing"
	// CauseStepFailing: another step's last attempt failed.
	CauseStepFailing = "StepFailing"
	// CausePodWaiting: a pod the step waits on (a Job's, or one that uses
	// an unused step's target) cannot run: unschedulable, an image that
	// cannot be pulled, a crashing container.
	CausePodWaiting = "PodWaiting"
	// CauseStillInUse: the pods an unused step waits on run normally.
	CauseStillInUse = "StillInUse"
	// CauseNotDeleted: an object a wait step selects is not being deleted.
	CauseNotDeleted = "NotDeleted"
	// CauseJobRunning: a job step's Job runs, with no pod stuck.
	CauseJobRunning = "JobRunning"
	// CauseOutsideNamespace: the root cause lies outside a TeardownPolicy's
	// namespace, which its author may not read (the controller's tenant
	// view of the causes above and of the engine's).
	CauseOutsideNamespace = "OutsideNamespace"
)

// The kinds of Teardown steps, as the controller names them.
const (
	StepWebhook = "webhook"
	StepJob     = "job"
	StepDelete  = "delete"
	StepWait    = "wait"
	StepUnused  = "unused"
)

// StepRef is an object a pending step waits on.
type StepRef struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

func (r StepRef) ref(resource string) ObjectRef {
	apiVersion, kind := r.GVK.ToAPIVersionAndKind()
	return ObjectRef{APIVersion: apiVersion, Kind: kind, Resource: resource, Namespace: r.Namespace, Name: r.Name}
}

// StepFailed is the finding of a step of kind whose last attempt failed
// with failure: the step waits on nothing else then.
func StepFailed(kind, failure string) Finding {
	cause := CauseStepFailing
	if kind == StepWebhook {
		cause = CauseWebhookFailing
	}
	return Finding{Cause: cause, Severity: SeverityBlocker, Message: failure}
}

// WaitingOn explains one object a pending step of kind waits on: for a Job,
// or a pod that is not being deleted, why it does not finish (stuck false
// when it just runs); else the engine's first root blocker of the object
// (Explain; the controller's Explainer skips the removal dry-run); else, for a wait step, that the
// object does not meet the step's condition. ok is false when there is
// nothing to say (a pod that cannot be read, an object with no blocker).
func (e *Explainer) WaitingOn(ctx context.Context, kind string, ref StepRef) (f Finding, stuck, ok bool) {
	switch {
	case ref.GVK.Group == "batch" && ref.GVK.Kind == "Job":
		return e.jobRunning(ctx, ref)
	case ref.GVK.Group == "" && ref.GVK.Kind == "Pod":
		pod, err := e.c.Pod(ctx, ref.Namespace, ref.Name)
		if err != nil {
			return Finding{}, false, false
		}
		if pod.DeletionTimestamp == nil {
			if j := signals.JudgePod(pod); j.CannotRun {
				return Finding{Cause: CausePodWaiting, Severity: SeverityBlocker, Object: podObjectRef(pod), Message: "cannot run: " + j.Why}, true, true
			}
			if kind == StepUnused {
				return Finding{Cause: CauseStillInUse, Severity: SeverityWaiting, Object: podObjectRef(pod),
					Message: fmt.Sprintf("still runs (%s) and uses it", pod.Status.Phase)}, false, true
			}
		}
	}
	if roots := e.rootBlockers(ctx, ref); len(roots) > 0 {
		return roots[0], true, true
	}
	if kind == StepWait {
		return Finding{Cause: CauseNotDeleted, Severity: SeverityWaiting, Object: refPtr(ref.ref("")),
			Message: "does not meet the wait step's condition"}, false, true
	}
	return Finding{}, false, false
}

// RootBlockers explains the object ref names and returns its root blockers; none when it cannot be read or mapped.
func (e *Explainer) RootBlockers(ctx context.Context, ref StepRef) []Finding {
	return e.rootBlockers(ctx, ref)
}

func (e *Explainer) rootBlockers(ctx context.Context, ref StepRef) []Finding {
	rep, err := e.explainRef(ctx, ref)
	if err != nil {
		return nil
	}
	if rep.Verdict == VerdictStalled {
		// No all-clear without evidence: a stalled object is reported too.
		return []Finding{StalledFinding(rep)}
	}
	return rep.RootBlockers
}

// StalledFinding is a stalled report told as one root cause, for the
// controller's diagnosis and status.
func StalledFinding(rep *Report) Finding {
	msg := fmt.Sprintf("nothing found blocks it, and nothing shows it progressing: no bounded wait, no change in the last %s", ShortDuration(ProgressWindow))
	if len(rep.Checked) > 0 {
		msg += "; checked: " + strings.Join(rep.Checked, "; ")
	}
	if len(rep.NotReadable) > 0 {
		msg += "; not readable: " + strings.Join(rep.NotReadable, "; ")
	}
	return Finding{Cause: CauseStalled, Severity: SeverityBlocker, Object: refPtr(rep.Target), Message: msg}
}

func (e *Explainer) explainRef(ctx context.Context, ref StepRef) (*Report, error) {
	m, err := e.c.Mapper().RESTMapping(ref.GVK.GroupKind(), ref.GVK.Version)
	if err != nil {
		return nil, err
	}
	t := Target{GVR: m.Resource, GVK: ref.GVK, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace, Namespace: ref.Namespace, Name: ref.Name}
	return e.Explain(ctx, t)
}

// jobRunning says why a job step's Job has not finished: a pod of it that
// cannot run, else that it runs.
func (e *Explainer) jobRunning(ctx context.Context, ref StepRef) (Finding, bool, bool) {
	pods, err := e.c.Pods(ctx, ref.Namespace)
	if err != nil && !apierrors.IsNotFound(err) {
		return Finding{}, false, false
	}
	active := 0
	for i := range pods {
		p := &pods[i]
		if p.Labels[batchJobNameLabel] != ref.Name {
			continue
		}
		if j := signals.JudgePod(p); j.CannotRun {
			return Finding{Cause: CausePodWaiting, Severity: SeverityBlocker, Object: podObjectRef(p),
				Message: fmt.Sprintf("a pod of Job %s/%s, cannot run: %s", ref.Namespace, ref.Name, j.Why)}, true, true
		}
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending {
			active++
		}
	}
	return Finding{Cause: CauseJobRunning, Severity: SeverityWaiting, Object: refPtr(ref.ref("jobs")),
		Message: fmt.Sprintf("runs (%d active pod(s))", active)}, false, true
}

// batchJobNameLabel is the label the Job controller puts on its pods.
const batchJobNameLabel = "job-name"

func podObjectRef(p *corev1.Pod) *ObjectRef {
	return &ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
}

// Sentence is f in one line, as the controller's status and Events say it:
// the object, the finalizer, then the message.
func Sentence(f Finding) string {
	msg := f.Message
	if f.Finalizer != "" {
		msg = f.Finalizer + ": " + msg
	}
	if f.Object != nil {
		msg = f.Object.String() + ": " + msg
	}
	return msg
}
