/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// "Why did it vanish" (issue 11, family 5): explain on an object that does
// not exist says what the cluster still remembers of it: Events about it
// (the garbage collector's OwnerRefInvalidNamespace, an eviction, a
// controller's SuccessfulDelete on its owner), and its namespace being
// deleted or gone.

// Causes of an absent target.
const (
	// CauseAbsent: the target does not exist.
	CauseAbsent = "Absent"
	// CauseEventAbout: an Event about the target, kept after it went.
	CauseEventAbout = "EventAbout"
	// CauseDeletedByController: a controller's Event on the target's
	// owner says it deleted the target (SuccessfulDelete).
	CauseDeletedByController = "DeletedByController"
	// CauseNamespaceDeleted: the target's namespace is gone, and with it
	// everything it held.
	CauseNamespaceDeleted = "NamespaceDeleted"
	// CauseNamespaceTerminating: the target's namespace is being deleted.
	CauseNamespaceTerminating = "NamespaceTerminating"
	// CauseNoTrace: nothing in the cluster says why it went.
	CauseNoTrace = "NoTrace"
)

// vanished builds the report of a target that does not exist.
func (e *Explainer) vanished(ctx context.Context, t Target) *Report {
	ref := t.Ref()
	rep := &Report{APIVersion: ReportAPIVersion, Kind: "ExplainReport", Target: ref, Absent: true}
	top := Finding{Cause: CauseAbsent, Severity: SeverityInfo, Object: &ref, Message: fmt.Sprintf("%s does not exist", ref)}
	evNS := t.Namespace
	if !t.Namespaced {
		// Recorders file the Events of cluster-scoped objects in default.
		evNS = metav1.NamespaceDefault
	}
	nsGone := false
	if t.Namespaced {
		switch ns, err := e.c.Namespace(ctx, t.Namespace); {
		case apierrors.IsNotFound(err):
			nsGone = true
			top.Children = append(top.Children, Finding{Cause: CauseNamespaceDeleted, Severity: SeverityInfo, Object: &ObjectRef{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: t.Namespace},
				Message: fmt.Sprintf("namespace %s does not exist either: everything in it, its Events included, went with it", t.Namespace)})
		case err == nil && ns.DeletionTimestamp != nil:
			top.Children = append(top.Children, Finding{Cause: CauseNamespaceTerminating, Severity: SeverityInfo, Object: &ObjectRef{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: ns.Name, UID: string(ns.UID)},
				Message: fmt.Sprintf("namespace %s is being deleted (for %s): the namespace controller deletes everything in it", ns.Name, Age(e.now.Sub(ns.DeletionTimestamp.Time)))})
		}
	}
	// A policy that selected it but never guarded it (refused.go).
	top.Children = append(top.Children, e.refusedFindings(ctx, t)...)
	if !nsGone {
		top.Children = append(top.Children, e.eventsAbout(ctx, t, evNS)...)
	}
	if len(top.Children) == 0 {
		top.Children = append(top.Children, Finding{Cause: CauseNoTrace, Severity: SeverityInfo, Object: &ref,
			Message: "no Event mentions it and its namespace is there: a client deleted it, or the garbage collector did once its owners were gone (Events expire after kube-apiserver's --event-ttl, one hour by default); the API server's audit log names who"})
	}
	top.Message += "; what the cluster remembers of it is below"
	rep.Findings = []Finding{top}
	return rep
}

// eventsAbout reads the Events that mention the target: those about it
// (involvedObject), newest first, and the SuccessfulDelete Events its
// owner's controller recorded when it deleted it.
func (e *Explainer) eventsAbout(ctx context.Context, t Target, ns string) []Finding {
	all, err := e.c.Events(ctx, ns)
	if err != nil {
		return nil
	}
	var evs []corev1.Event
	for _, ev := range all {
		io := ev.InvolvedObject
		if io.Name == t.Name && io.Kind == t.GVK.Kind && (!t.Namespaced || io.Namespace == t.Namespace) {
			evs = append(evs, ev)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return eventLastSeen(&evs[i]).After(eventLastSeen(&evs[j])) })
	var out []Finding
	for i := range evs {
		if i == maxChildren {
			break
		}
		out = append(out, e.eventFinding(ctx, t, &evs[i]))
	}
	// The ReplicaSet, Job, StatefulSet... controllers record the deletion
	// of what they own on the owner: "Deleted pod: web-7d9f-x2k4q".
	for i := range all {
		ev := &all[i]
		if ev.Reason != "SuccessfulDelete" || !mentionsName(ev.Message, t.Name) {
			continue
		}
		owner := fmt.Sprintf("%s %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Name)
		out = append(out, Finding{Cause: CauseDeletedByController, Severity: SeverityInfo, Object: refPtr(t.Ref()),
			Message: fmt.Sprintf("%s deleted it: Event %s on %s, %s ago: %s", eventReporter(ev), ev.Reason, owner, Age(e.now.Sub(eventLastSeen(ev))), ev.Message)})
	}
	return out
}

// eventFinding reads one Event about the target; the garbage collector's
// OwnerRefInvalidNamespace says why it deleted the object.
func (e *Explainer) eventFinding(ctx context.Context, t Target, ev *corev1.Event) Finding {
	ref := t.Ref()
	ref.UID = string(ev.InvolvedObject.UID)
	what := fmt.Sprintf("%s Event %s from %s, %s ago", ev.Type, ev.Reason, eventReporter(ev), Age(e.now.Sub(eventLastSeen(ev))))
	if ev.Count > 1 {
		what += fmt.Sprintf(" (%d times)", ev.Count)
	}
	f := Finding{Cause: CauseEventAbout, Severity: SeverityInfo, Object: &ref, Message: what + ": " + ev.Message}
	switch ev.Reason {
	case "OwnerRefInvalidNamespace":
		// pkg/controller/garbagecollector: a namespaced dependent whose
		// ownerReference names an owner its namespace does not hold is
		// treated as having no owner, and deleted.
		f.Cause, f.Catalog, f.Severity = CauseCrossNamespaceOwnerReference, "E4", SeverityWarning
		where := ""
		if ns := e.ownerNamespaceOf(ctx, ev.Message); ns != "" {
			where = fmt.Sprintf(" (that owner lives in namespace %s)", ns)
		}
		f.Message = fmt.Sprintf("the garbage collector deleted it: its ownerReference named an owner that namespace %s does not hold%s; owners must be in the same namespace, or cluster-scoped, so it counted as having no owner. %s: %s", t.Namespace, where, what, ev.Message)
		f.FixOwner = "whoever set the ownerReference (a controller or a manifest)"
		f.Remedy = "owner references cannot cross namespaces: recreate it without that ownerReference, and link it to its owner by a label or annotation with explicit cleanup"
	case "Evicted", "TaintManagerEviction", "Preempted", "Preempting":
		f.Message = fmt.Sprintf("it was evicted: %s: %s", what, ev.Message)
	}
	return f
}

func eventLastSeen(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

func eventReporter(ev *corev1.Event) string {
	switch {
	case ev.Source.Component != "":
		return ev.Source.Component
	case ev.ReportingController != "":
		return ev.ReportingController
	}
	return "an unnamed component"
}

// mentionsName says whether msg names name as a whole word ("Deleted pod:
// web-0" names web-0, not web).
func mentionsName(msg, name string) bool {
	for _, w := range strings.FieldsFunc(msg, func(r rune) bool { return r == ' ' || r == ',' || r == ':' || r == '"' || r == '\'' }) {
		if w == name {
			return true
		}
	}
	return false
}

// invalidOwnerRef reads the owner the garbage collector's
// OwnerRefInvalidNamespace message names: "ownerRef [v1/ConfigMap,
// namespace: web, name: frontend, uid: 3a49…] does not exist in namespace
// "web"" (pkg/controller/garbagecollector, objectReference.String).
var invalidOwnerRef = regexp.MustCompile(`ownerRef \[([^,\]]+), namespace: [^,\]]*, name: [^,\]]*, uid: ([^,\]\s]+)\]`)

// ownerNamespaceOf finds where the owner an OwnerRefInvalidNamespace
// message names really lives, by its uid; "" when unknown.
func (e *Explainer) ownerNamespaceOf(ctx context.Context, msg string) string {
	m := invalidOwnerRef.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	i := strings.LastIndex(m[1], "/")
	if i <= 0 {
		return ""
	}
	gv, err := schema.ParseGroupVersion(m[1][:i])
	if err != nil {
		return ""
	}
	mapping := e.c.MapKind(gv.WithKind(m[1][i+1:]))
	if mapping == nil || !mapping.Namespaced {
		return ""
	}
	return e.c.FindByUID(ctx, mapping, types.UID(m[2]))
}
