/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Causes of this family (issue 20, family 1: a live owner waiting on
// something else).
const (
	// CauseOwnerWaitingOn: the finalizer's owner runs, and its cleanup
	// waits on what the finding's children name (an object it references,
	// a Job the API server refused, a leader lock nobody holds); their
	// blockers are the root.
	CauseOwnerWaitingOn = "OwnerWaitingOn"
	// CauseWaitsOnObject: an object the target references (spec or status
	// reference, a GitOps app's status.resources or inventory) still
	// exists; the owner waits for it to go.
	CauseWaitsOnObject = "WaitsOnObject"
	// CauseCleanupJobRefused: the owner tried to create a Job (or pod) for
	// its cleanup and the API server refused it (a namespace being deleted,
	// a ResourceQuota, an admission webhook).
	CauseCleanupJobRefused = "CleanupJobRefused"
	// CauseOwnerNotLeading: the owner's workload has ready replicas, but its
	// leader lock (a Lease, or a leader-for-life ConfigMap) is held by a
	// pod that is gone or not running: no replica reconciles.
	CauseOwnerNotLeading = "OwnerNotLeading"
)

// waitingFor asks what a live owner is waiting for, from the cluster's own
// signals, once the finding says only that it runs ("wait"), that it says
// something failed, or that its RBAC is short. What it finds comes first
// among the finding's children, so that its blockers are the report's
// first root blockers; a missing permission is kept beside them, never
// instead of them (issue 20).
func (e *Explainer) waitingFor(ctx context.Context, fd *Finding, s subject) {
	o := fd.Owner
	if o == nil || o.State != OwnerAlive || o.Source == SourceNone || (s.InCatalog && s.Entry.BuiltIn) {
		return
	}
	switch fd.Cause {
	case CauseCleanupInProgress, CauseOwnerLacksRBAC, CauseOwnerReportsFailure:
	default:
		return
	}
	var waits []Finding
	waits = append(waits, e.leaderLockHeld(ctx, o)...)      // waitlocks.go
	waits = append(waits, e.refusedCreations(ctx, s, o)...) // waitjobs.go
	waits = append(waits, e.referencedObjects(ctx, s)...)   // waitrefs.go
	waits = append(waits, e.familyWaits(ctx, fd, s)...)     // families.go

	placeWaits(fd, o, waits)
}

// placeWaits puts what a live owner waits on into its finalizer's finding:
// first among the children, so that their blockers are the first root
// blockers. When one of them blocks, the finding becomes OwnerWaitingOn and
// an RBAC denial moves beside them; when none does, a blocker the finding
// already had (the owner's words, its RBAC, a retry) stays its cause.
func placeWaits(fd *Finding, o *Owner, waits []Finding) {
	if len(waits) == 0 {
		return
	}
	if !anyBlocker(waits) && fd.Severity == SeverityBlocker {
		// Nothing it waits on blocks: what the finding found (the owner's
		// words, its RBAC, a retry) stays the cause, with the rest below.
		fd.Children = append(waits, fd.Children...)
		return
	}
	var rest []Finding
	if fd.Cause == CauseOwnerLacksRBAC {
		// Secondary: reported beside what the owner waits on.
		rest = append(rest, Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityBlocker, Object: fd.Object, Finalizer: fd.Finalizer,
			Message: "beside what it waits on: " + fd.Message, FixOwner: fd.FixOwner, Remedy: fd.Remedy, Leaks: fd.Leaks})
	}
	said := ""
	if fd.Cause == CauseOwnerReportsFailure {
		said = " (" + fd.Message + ")"
	}
	fd.Children = append(append(waits, fd.Children...), rest...)
	fd.Cause, fd.Catalog = CauseOwnerWaitingOn, "B6"
	fd.Severity = SeverityWaiting
	if anyBlocker(waits) {
		fd.Severity = SeverityBlocker
	}
	fd.Message = fmt.Sprintf("%s owns %q and is running, but its cleanup waits on: %s%s", orUnknown(o.Component), fd.Finalizer, summarize(waits), said)
	fd.FixOwner = "whoever owns what it waits on (below)"
	fd.Remedy = "fix what the owner waits on (below); it then removes the finalizer itself"
	if fd.Severity == SeverityWaiting {
		fd.Remedy = "wait: the owner deletes what it waits on (below) and then removes the finalizer; if that does not progress, explain those objects"
	}
}

// anyBlocker says whether fs or anything below them blocks.
func anyBlocker(fs []Finding) bool {
	found := false
	WalkFindings(fs, func(f *Finding) {
		if f.Severity == SeverityBlocker {
			found = true
		}
	})
	return found
}

// summarize names what the owner waits on, in a line.
func summarize(waits []Finding) string {
	parts := make([]string, 0, len(waits))
	for _, w := range waits {
		what := w.Cause
		if w.Object != nil {
			what += " " + w.Object.String()
		}
		parts = append(parts, what)
		if len(parts) == 5 && len(waits) > 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(waits)-5))
			break
		}
	}
	return strings.Join(parts, "; ")
}

// rankRoots puts a running owner's missing permission (B4) after the other
// root blockers, keeping tree order otherwise: what an owner waits on, or
// another finalizer's cause, is fixed first; the denial stays in the list,
// as it must be fixed too (issue 20).
func rankRoots(roots []Finding) []Finding {
	sort.SliceStable(roots, func(i, j int) bool {
		return roots[i].Cause != CauseOwnerLacksRBAC && roots[j].Cause == CauseOwnerLacksRBAC
	})
	return roots
}
