/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/teardown-dev/teardown/internal/cleantext"
	"github.com/teardown-dev/teardown/internal/diagnose/signals"
)

// No all-clear without evidence (issue 26): once every pass has looked for
// a blocker and found none, a Terminating object is called progressing
// only on positive evidence that it progresses, read from the cluster:
//
//   - a bounded wait with its deadline: the object (a pod) inside its grace
//     period; a pod it waits on inside its own; a built-in controller
//     judged alive that is given until --gc-stall-after before it is
//     called stuck; a finalizer's handler (pkg/finalizer, a Teardown step)
//     that asked to be checked again at a time not yet long past;
//   - a change since the deletion began, within ProgressWindow, judged by
//     signals.Progress: one of the object's conditions changed
//     (lastTransitionTime), or an Event about it was first said. The
//     deletion itself is not a change, an Event said again and again since
//     before is not news, and a failure that recurs is evidence against.
//
// Otherwise the verdict is Stalled: nothing seen blocks it, nothing shows
// progress; the report says what was checked and what could not be read.

// Verdicts (Report.Verdict).
const (
	// VerdictBlocked: at least one root blocker was found.
	VerdictBlocked = "Blocked"
	// VerdictStalled: nothing found blocks the deletion and nothing shows it
	// progressing (no bounded wait, no recent change).
	VerdictStalled = "Stalled"
	// VerdictProgressing: no blocker, and evidence of progress.
	VerdictProgressing = "Progressing"
	// VerdictWaiting: no blocker and no evidence of progress, but the
	// deletion waits on kube-controller-manager, whose liveness cannot be
	// read (no leader election, a managed control plane), and is younger
	// than --gc-stall-after: a bounded wait whose actor is unverified.
	// Past that, it is Stalled.
	VerdictWaiting = "Waiting"
)

// CauseStalled is the finding the controller's diagnosis reports for a
// stalled object (RootBlockers): no blocker, no progress.
const CauseStalled = "Stalled"

// ProgressWindow is how recent a change must be to count as progress.
const ProgressWindow = 10 * time.Minute

// judgeProgress sets a Terminating object's verdict and what was checked
// of its finalizers; with no blocker, also the evidence of progress, the
// conditions and Events checked and what could not be read. obj is the
// target as read.
func (e *Explainer) judgeProgress(ctx context.Context, t Target, obj metav1.Object, rep *Report) {
	if !rep.Terminating {
		return
	}
	checked, unread := finalizerChecks(rep, obj)
	if rep.Blocked {
		rep.Verdict, rep.Checked, rep.NotReadable = VerdictBlocked, checked, dedupe(unread)
		return
	}
	dts := obj.GetDeletionTimestamp().Time
	var evidence []string
	if e.now.Before(dts) {
		evidence = append(evidence, fmt.Sprintf("inside its grace period until %s (%s left)", dts.UTC().Format(time.RFC3339), Age(dts.Sub(e.now))))
	}
	WalkFindings(rep.Findings, func(f *Finding) {
		switch f.Cause {
		case CauseProgressNotRecorded:
			unread = append(unread, fmt.Sprintf("the progress of %s: the API server refuses its record (refusedObjects of the policy)", f.Finalizer))
		case CauseNotGuarded:
			checked = append(checked, fmt.Sprintf("%s: selected by a policy, never guarded (refusedObjects of the policy)", f.Finalizer))
		}
		evidence = append(evidence, e.boundedWait(ctx, f, dts)...)
	})
	for _, c := range rep.Controllers {
		if c.State == LivenessUnknown {
			unread = append(unread, c.Evidence)
		}
	}
	ev, ch, ur := e.recentChanges(ctx, t, obj)
	evidence, checked, unread = append(evidence, ev...), append(checked, ch...), append(unread, ur...)
	rep.ProgressEvidence, rep.Checked, rep.NotReadable = dedupe(evidence), checked, dedupe(unread)
	switch {
	case len(rep.ProgressEvidence) > 0:
		rep.Verdict = VerdictProgressing
	case unverified(rep) != nil && e.now.Before(dts.Add(e.gcStallAfter)):
		rep.Verdict = VerdictWaiting
	default:
		rep.Verdict = VerdictStalled
	}
}

// finalizerChecks is what the walk checked of each of obj's finalizers
// (its cause, and its owner's state), and the owners whose liveness it
// could not read.
func finalizerChecks(rep *Report, obj metav1.Object) (checked, unread []string) {
	WalkFindings(rep.Findings, func(f *Finding) {
		if f.Finalizer == "" || f.Object == nil || f.Object.UID != string(obj.GetUID()) {
			return
		}
		state := ""
		if f.Owner != nil {
			state = fmt.Sprintf(" (owner %s: %s)", orUnknown(f.Owner.Component), f.Owner.State)
			if f.Owner.State == OwnerUnknown {
				unread = append(unread, fmt.Sprintf("the liveness of %s, the owner of %s", orUnknown(f.Owner.Component), f.Finalizer))
			}
		}
		checked = append(checked, fmt.Sprintf("%s: %s%s", f.Finalizer, f.Cause, state))
	})
	return checked, unread
}

// boundedWait is the evidence a finding gives of a wait with a deadline.
func (e *Explainer) boundedWait(ctx context.Context, f *Finding, deleted time.Time) []string {
	switch {
	case f.Severity != SeverityWaiting:
		return nil
	case f.Cause == CausePodInGracePeriod && f.Object != nil:
		if p, err := e.c.Pod(ctx, f.Object.Namespace, f.Object.Name); err == nil && p.DeletionTimestamp != nil && e.now.Before(p.DeletionTimestamp.Time) {
			return []string{fmt.Sprintf("%s is inside its grace period until %s", f.Object, p.DeletionTimestamp.UTC().Format(time.RFC3339))}
		}
	case f.Progress != nil && f.Progress.NextAttempt != nil:
		next := *f.Progress.NextAttempt
		if e.now.Sub(next) < ProgressWindow {
			return []string{fmt.Sprintf("%s: its handler retries (attempt %d, %s), next attempt at %s", f.Progress.Finalizer, f.Progress.Attempts,
				cleantext.Clean(f.Progress.Message, 120), next.UTC().Format(time.RFC3339))}
		}
	case f.Owner != nil && f.Owner.State == OwnerAlive && strings.Contains(f.Owner.Component, "(kube-controller-manager)"):
		until := deleted.Add(e.gcStallAfter)
		if e.now.Before(until) {
			return []string{fmt.Sprintf("%s runs and is given until %s (--gc-stall-after %s) before it is called stuck", f.Owner.Component, until.UTC().Format(time.RFC3339), ShortDuration(e.gcStallAfter))}
		}
	}
	return nil
}

// recentChanges is the evidence of change since the deletion began, within
// ProgressWindow, as signals.Progress judges it (the one judge of progress:
// a condition's transition, an Event first said since the deletion; a
// failure said again and again is evidence against); with what it checked
// and what it could not read.
func (e *Explainer) recentChanges(ctx context.Context, t Target, obj metav1.Object) (evidence, checked, unread []string) {
	u, full := obj.(*unstructured.Unstructured)
	if !full {
		got, err := e.c.GetObject(ctx, t.GVR, t.Namespace, t.Name)
		if err != nil {
			unread = append(unread, "the object's status: "+Shorten(err.Error(), 160))
			got = metaOnly(subject{GVR: t.GVR, GVK: t.GVK, Obj: obj})
		}
		u = got
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	checked = append(checked, fmt.Sprintf("%d status condition(s)", len(conds)))
	ns := t.Namespace
	if !t.Namespaced {
		ns = metav1.NamespaceDefault // recorders file the Events of cluster-scoped objects there
	}
	var about []corev1.Event
	events, err := e.c.Events(ctx, ns)
	if err != nil {
		unread = append(unread, "the Events of namespace "+ns+": "+Shorten(err.Error(), 160))
	}
	for i := range events {
		ev := &events[i]
		if ev.InvolvedObject.UID == obj.GetUID() || ev.InvolvedObject.Name == t.Name && ev.InvolvedObject.Kind == t.GVK.Kind {
			about = append(about, *ev)
		}
	}
	if err == nil {
		checked = append(checked, fmt.Sprintf("%d Event(s) about it", len(about)))
	}
	a := signals.Progress(signals.ProgressInput{Object: u, Events: about, Now: e.now, Window: ProgressWindow})
	for _, ev := range a.For {
		evidence = append(evidence, ev.What)
	}
	for _, ev := range a.Against {
		checked = append(checked, "against progress: "+ev.What)
	}
	return evidence, checked, unread
}

func dedupe(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
