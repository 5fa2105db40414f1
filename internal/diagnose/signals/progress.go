/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

// Family 7: progress judged from evidence. A Warning's wording is not a
// verdict: a drain whose last pod is inside its grace period is progressing
// (until its deadline), a "failed" that recurs with no change is not. A
// deletion progresses only on positive evidence: a bounded wait with its
// deadline, or a change since the deletion began (not the deletion itself)
// within a recent window.

// EvidenceKind is a kind of evidence about progress.
type EvidenceKind string

// Evidence kinds.
const (
	// EvidenceBoundedWait: something the deletion waits for ends by a
	// known deadline (a pod inside its grace period).
	EvidenceBoundedWait EvidenceKind = "BoundedWait"
	// EvidenceChange: something changed since the deletion began, within
	// the window (a condition's transition, the owner's new words).
	EvidenceChange EvidenceKind = "Change"
	// EvidenceRecurring: the same failure, said again and again, with
	// nothing changing: evidence against progress.
	EvidenceRecurring EvidenceKind = "Recurring"
	// EvidencePastDeadline: a bounded wait whose deadline passed.
	EvidencePastDeadline EvidenceKind = "PastDeadline"
)

// Evidence is one observation about progress.
type Evidence struct {
	Kind EvidenceKind
	What string
	// At is when it happened (a change) or was last seen (recurring).
	At time.Time
	// Until is a bounded wait's deadline.
	Until time.Time
}

// String is "BoundedWait: Pod shop/web-0 inside its grace period until 12:10:00Z".
func (e Evidence) String() string { return string(e.Kind) + ": " + e.What }

// ProgressInput is what Progress judges.
type ProgressInput struct {
	// Object is the target, being deleted.
	Object *unstructured.Unstructured
	// Events are the Events about the target (any source).
	Events []corev1.Event
	// Pods are pods the deletion waits for (a drain's, a dependent's).
	Pods []*corev1.Pod
	// World judges the pods' nodes (a pod on a lost node never ends
	// within its grace period); zero World leaves nodes unjudged.
	World World
	// Extra is evidence the engine found elsewhere (a dependent gone).
	Extra []Evidence
	Now   time.Time
	// Window is how recent a change must be (zero: 10 minutes).
	Window time.Duration
}

// Assessment is the judgement of progress.
type Assessment struct {
	// Progressing: there is positive evidence.
	Progressing bool
	// For is the positive evidence; Against what says it is not
	// progressing (recurring failures, waits past their deadline).
	For, Against []Evidence
	Window       time.Duration
}

// A change counts only strictly after the deletion began: a transition at
// the deletion's own timestamp (timestamps are seconds) is the deletion
// itself. The owner noting the deletion a moment later is its first act,
// and counts, as the engine counted it before this judge was its one
// (TestFamilyProgressingNotBlocked on the real control plane).

// minRecurrences is how many times a failure must be said to recur.
const minRecurrences = 3

// Progress judges whether a deletion progresses, from evidence only.
func Progress(in ProgressInput) Assessment {
	a := Assessment{Window: in.Window}
	if a.Window <= 0 {
		a.Window = 10 * time.Minute
	}
	var began time.Time
	if dt := in.Object.GetDeletionTimestamp(); dt != nil {
		began = dt.Time
	}
	recent := func(t time.Time) bool {
		return !t.IsZero() && t.After(began) && in.Now.Sub(t) <= a.Window
	}
	for _, p := range in.Pods {
		if p.DeletionTimestamp == nil {
			continue
		}
		deadline := p.DeletionTimestamp.Time
		ref := Ref{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}
		lost := ""
		if p.Spec.NodeName != "" && (in.World.NodesListed || len(in.World.Nodes) > 0) {
			w := in.World
			w.Now = in.Now
			if v := w.Judge(Place{Kind: PlaceNode, Name: p.Spec.NodeName, Via: "spec.nodeName"}); v.State != StateHealthy && v.State != StateUnknown {
				lost = fmt.Sprintf(" on Node %s (%s)", p.Spec.NodeName, v.State)
			}
		}
		switch {
		case in.Now.Before(deadline) && lost == "":
			a.For = append(a.For, Evidence{Kind: EvidenceBoundedWait, Until: deadline,
				What: fmt.Sprintf("%s is inside its grace period until %s (%s from now)", ref, deadline.UTC().Format(time.RFC3339), Age(deadline.Sub(in.Now)))})
		case lost != "":
			a.Against = append(a.Against, Evidence{Kind: EvidencePastDeadline, Until: deadline,
				What: fmt.Sprintf("%s is terminating%s: nothing there will stop it", ref, lost)})
		default:
			a.Against = append(a.Against, Evidence{Kind: EvidencePastDeadline, Until: deadline,
				What: fmt.Sprintf("%s is past its grace period by %s", ref, Age(in.Now.Sub(deadline)))})
		}
	}
	for _, c := range conditionsOf(in.Object) {
		if recent(c.Transition) {
			a.For = append(a.For, Evidence{Kind: EvidenceChange, At: c.Transition,
				What: fmt.Sprintf("condition %s changed %s ago", c.String(), Age(in.Now.Sub(c.Transition)))})
		}
	}
	for _, e := range in.Events {
		first, last, count := eventTimes(e)
		text := cleantext.Clean(e.Reason+": "+e.Message, maxText)
		switch {
		case e.Type == corev1.EventTypeWarning && count >= minRecurrences:
			// A failure said again and again is no news, however recent.
			a.Against = append(a.Against, Evidence{Kind: EvidenceRecurring, At: last,
				What: fmt.Sprintf("Warning %s said %d times since %s, last %s ago, unchanged", text, count, first.UTC().Format(time.RFC3339), Age(in.Now.Sub(last)))})
		case recent(first):
			// New words since the deletion began; a Normal Event said
			// again and again since before it (still cleaning up...) is
			// not new, however recent its last time.
			a.For = append(a.For, Evidence{Kind: EvidenceChange, At: first,
				What: fmt.Sprintf("%s Event %s%s, first said %s ago: %s", e.Type, cleantext.Clean(e.Reason, 63), reporterOf(e), Age(in.Now.Sub(first)),
					cleantext.Clean(e.Message, maxText))})
		}
	}
	a.For = append(a.For, in.Extra...)
	sort.SliceStable(a.For, func(i, j int) bool { return a.For[i].Kind < a.For[j].Kind })
	a.Progressing = len(a.For) > 0
	return a
}

// eventTimes reads an Event's first and last time and count, from the
// series when there is one.
func eventTimes(e corev1.Event) (first, last time.Time, count int) {
	first, last, count = e.FirstTimestamp.Time, e.LastTimestamp.Time, int(e.Count)
	if first.IsZero() {
		first = e.EventTime.Time
	}
	if e.Series != nil {
		count = int(e.Series.Count)
		if !e.Series.LastObservedTime.IsZero() {
			last = e.Series.LastObservedTime.Time
		}
	}
	if last.IsZero() {
		last = first
	}
	if first.IsZero() {
		// Only its last time recorded: it was first said then.
		first = last
	}
	if count == 0 {
		count = 1
	}
	return first, last, count
}

// reporterOf is " from <component>" when the Event says who reported it.
func reporterOf(e corev1.Event) string {
	switch {
	case e.Source.Component != "":
		return " from " + cleantext.Clean(e.Source.Component, 63)
	case e.ReportingController != "":
		return " from " + cleantext.Clean(e.ReportingController, 63)
	}
	return ""
}
