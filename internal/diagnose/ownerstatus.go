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
)

// Causes of this family (see report.go).
const (
	// CauseOwnerReportsFailure: the owner runs (or ran) and says, in the
	// object's status or in Warning Events, why it cannot finish (B2).
	CauseOwnerReportsFailure = "OwnerReportsFailure"
)

// maxSaid bounds what explain repeats of an owner's own words: status
// messages and Events are written by others, and can be any length.
const maxSaid = 300

// statement is what an owner said about an object: a condition of its
// status, or a Warning Event.
type statement struct {
	// What is "condition DeletionError" or "event FailedDelete (component)".
	What string
	// Text is the reason and message, cleaned and bounded.
	Text string
	At   time.Time
}

func (s statement) String() string { return fmt.Sprintf("%s: %s", s.What, s.Text) }

// ownerSays: before any guess about a finalizer's owner, read what the owner
// itself says about the object: the newest condition of its status that
// reports a failure (Argo CD's DeletionError, Crossplane's Synced=False with
// ReconcileError, a False Ready with an error reason...), or the newest
// Warning Event about it from the owner's component. An owner that is
// running (or could not be judged) and reports a failure is the root
// blocker, with its own words; otherwise its words lead the message.
func (e *Explainer) ownerSays(ctx context.Context, fd *Finding, s subject) {
	o := fd.Owner
	if o == nil || o.Source == SourceNone || o.Source == SourcePolicy || (s.InCatalog && s.Entry.BuiltIn) {
		return
	}
	said, ok := e.newestStatement(ctx, s, o)
	if !ok {
		return
	}
	o.Evidence = append(o.Evidence, "the object's "+said.What+" says: "+said.Text+ago(e.now, said.At))
	if said.Text != "" && strings.Contains(fd.Message, said.Text) {
		return // the check quoted it already (C7's service-controller events)
	}
	words := fmt.Sprintf("the owner says: %s%s", said, ago(e.now, said.At))
	switch fd.Cause {
	case CauseOwnerLacksRBAC:
		if o.State != OwnerAlive {
			fd.Message = words + "; " + fd.Message
			break
		}
		// A running owner that reports a failure against its target (a
		// cloud account, a cluster, a bucket) is stopped by that first: the
		// missing right stays, beside it, as a later root blocker.
		fd.Children = append(fd.Children, rbacBeside(*fd))
		fallthrough
	case CauseCleanupInProgress, CauseOwnerUnknown, "":
		fd.Cause, fd.Catalog, fd.Severity = CauseOwnerReportsFailure, "B2", SeverityBlocker
		state := "is running"
		if o.State != OwnerAlive {
			state = "reports it (its workload was not found)"
		}
		fd.Message = fmt.Sprintf("%s; %s owns %q and %s, but cannot finish its cleanup until that is fixed", words, orUnknown(o.Component), fd.Finalizer, state)
		fd.FixOwner = "application owner / cloud admin (what the owner reports)"
		remedy := "fix what the owner reports; it then removes the finalizer itself"
		if s.InCatalog && s.Entry.Remedy != "" {
			remedy += "; " + s.Entry.Remedy
		}
		fd.Remedy = remedy
		if fd.Leaks == "" {
			fd.Leaks = "the external resources " + orUnknown(o.Component) + " is cleaning up"
		}
	default:
		fd.Message = words + "; " + fd.Message
	}
}

// rbacBeside is fd's OwnerLacksRBAC finding moved beside the failure its
// owner reports, as ownerRBAC words it when a check found a cause of its
// own.
func rbacBeside(fd Finding) Finding {
	msg := fd.Message
	if _, denial, ok := strings.Cut(fd.Message, "but cannot remove it: "); ok {
		msg = fmt.Sprintf("%s is running, but even once what it reports is fixed it cannot remove %q: %s", orUnknown(fd.Owner.Component), fd.Finalizer, denial)
	}
	return Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityBlocker, Object: fd.Object, Finalizer: fd.Finalizer, Owner: fd.Owner,
		Message: msg, FixOwner: fd.FixOwner, Remedy: fd.Remedy, Leaks: fd.Leaks}
}

// ago renders " (3m ago)", or nothing for an unknown time.
func ago(now, at time.Time) string {
	if at.IsZero() {
		return ""
	}
	return " (" + Age(now.Sub(at)) + " ago)"
}

// newestStatement is the newest failing condition of the object's status or
// Warning Event about it from its owner.
func (e *Explainer) newestStatement(ctx context.Context, s subject, o *Owner) (statement, bool) {
	var best statement
	found := false
	consider := func(st statement) {
		if !found || st.At.After(best.At) {
			best, found = st, true
		}
	}
	if u := e.fullObject(ctx, s); u != nil {
		if st, ok := failingCondition(u); ok {
			consider(st)
		}
	}
	if st, ok := e.ownerEvent(ctx, s.Obj, o); ok {
		consider(st)
	}
	return best, found
}

// fullObject is the object with its status: as explain read it, or, for
// status, which explains a whole cluster from metadata lists, read again
// through the Cluster (in Bulk mode one list per kind and namespace, never
// one GET per object).
func (e *Explainer) fullObject(ctx context.Context, s subject) *unstructured.Unstructured {
	if u, ok := s.Obj.(*unstructured.Unstructured); ok {
		return u
	}
	u, err := e.c.GetObject(ctx, s.GVR, s.Obj.GetNamespace(), s.Obj.GetName())
	if err != nil {
		return nil
	}
	return u
}

// failingCondition is the newest condition of u's status.conditions that
// reports a failure.
func failingCondition(u *unstructured.Unstructured) (statement, bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var best statement
	found := false
	for _, raw := range conds {
		c, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { v, _ := c[k].(string); return v }
		typ, status, reason, msg := str("type"), str("status"), str("reason"), str("message")
		if !conditionFails(typ, status, reason, msg) {
			continue
		}
		at, _ := time.Parse(time.RFC3339, str("lastTransitionTime"))
		text := reason
		if msg != "" {
			if text != "" {
				text += ": "
			}
			text += msg
		}
		what := "condition " + cleantext.Clean(typ, 64)
		if status != "" && status != string(corev1.ConditionTrue) {
			what += "=" + cleantext.Clean(status, 16)
		}
		st := statement{What: what, Text: cleantext.Clean(text, maxSaid), At: at}
		if !found || at.After(best.At) {
			best, found = st, true
		}
	}
	return best, found
}

// conditionFails says whether a status condition reports a failure to
// delete or reconcile:
//   - a condition whose type says deletion or finalization failed
//     (Argo CD's DeletionError, which it writes without a status;
//     DeleteFailed, FinalizerError...), unless it is False;
//   - a CRD-style Terminating condition whose reason says it failed;
//   - Ready, Synced, Healthy or Available False with a reason or message
//     that says error or failure (Crossplane's Synced=False ReconcileError),
//     not a mere Deleting or Creating.
func conditionFails(typ, status, reason, msg string) bool {
	t, r, m := strings.ToLower(typ), strings.ToLower(reason), strings.ToLower(msg)
	failure := func(s string) bool {
		for _, w := range failureWords {
			if strings.Contains(s, w) {
				return true
			}
		}
		return false
	}
	switch {
	case (strings.Contains(t, "delet") || strings.Contains(t, "finaliz") || strings.Contains(t, "cleanup")) && failure(t):
		return status != string(corev1.ConditionFalse)
	case t == "terminating":
		return failure(r)
	case t == "ready" || t == "synced" || t == "healthy" || t == "available":
		return status == string(corev1.ConditionFalse) && (failure(r) || failure(m))
	}
	return false
}

// failureWords, in a condition's reason or message, say that the owner
// failed against something, often outside the cluster: "AccessDenied",
// "cluster prod-eu unreachable", "dial tcp ...: i/o timeout",
// "connection refused", "token expired".
var failureWords = []string{"error", "fail", "denied", "forbidden", "unable", "cannot", "invalid",
	"unreachable", "not reachable", "timeout", "timed out", "refused", "unauthorized", "expired", "no such host"}

// ownerEvent is the newest Warning Event about obj from its owner: from a
// component named like the owner (its catalog workloads, its workload, the
// manager that added the finalizer); from anyone when the finalizer is the
// object's only one, as there is then no other controller to hear.
func (e *Explainer) ownerEvent(ctx context.Context, obj metav1.Object, o *Owner) (statement, bool) {
	all, err := e.c.WarningEvents(ctx, obj.GetNamespace())
	if err != nil {
		return statement{}, false
	}
	names := ownerNames(o)
	anyone := len(obj.GetFinalizers()) == 1
	var best statement
	found := false
	for i := range all {
		ev := &all[i]
		if ev.InvolvedObject.UID != obj.GetUID() {
			continue
		}
		from := ev.Source.Component
		if from == "" {
			from = ev.ReportingController
		}
		if !nameMatches(from, names) && (!anyone || controlPlaneComponents[from]) {
			continue
		}
		at := eventTime(ev)
		what := "event " + cleantext.Clean(ev.Reason, 64)
		if from != "" {
			what += " (" + cleantext.Clean(from, 64)
			if ev.Count > 1 {
				what += fmt.Sprintf(", ×%d", ev.Count)
			}
			what += ")"
		}
		st := statement{What: what, Text: cleantext.Clean(ev.Message, maxSaid), At: at}
		if !found || at.After(best.At) {
			best, found = st, true
		}
	}
	return best, found
}

// controlPlaneComponents write Warning Events about objects they do not
// hold by a finalizer (the garbage collector's OwnerRefInvalidNamespace, a
// scheduler's FailedScheduling): never the owner's words.
var controlPlaneComponents = map[string]bool{
	"kubelet": true, "default-scheduler": true, "kube-apiserver": true, "kube-controller-manager": true,
	"garbage-collector-controller": true, "namespace-controller": true, "node-controller": true,
	"taint-eviction-controller": true, "deployment-controller": true, "replicaset-controller": true,
	"statefulset-controller": true, "daemonset-controller": true, "job-controller": true, "cronjob-controller": true,
	"endpoint-controller": true, "endpointslice-controller": true, "persistentvolume-controller": true,
	"attachdetach-controller": true, "disruption-controller": true, "horizontal-pod-autoscaler": true,
}

// ownerNames are the names an owner's Events may come from.
func ownerNames(o *Owner) []string {
	var names []string
	if o.Manager != "" && !isGenericManager(o.Manager) {
		names = append(names, o.Manager)
	}
	if o.Workload != nil {
		names = append(names, o.Workload.Name)
	}
	for _, ev := range o.Evidence {
		if c, ok := strings.CutPrefix(ev, "catalog: "); ok {
			names = append(names, c)
		}
	}
	return names
}

// nameMatches says whether an Event's component is one of names, or one
// contains the other (argocd-application-controller for
// argocd-application-controller-0).
func nameMatches(from string, names []string) bool {
	from = strings.ToLower(from)
	if from == "" {
		return false
	}
	for _, n := range names {
		n = strings.ToLower(n)
		if n != "" && (strings.Contains(from, n) || strings.Contains(n, from)) {
			return true
		}
	}
	return false
}

// eventTime is when an Event was last seen.
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case ev.Series != nil:
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
