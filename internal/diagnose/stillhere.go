/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Causes of "why is it still here" (issue 11, family 5).
const (
	// CauseNotTerminating: the object has no deletionTimestamp.
	CauseNotTerminating = "NotTerminating"
	// CauseOwnerBeingDeleted: an object that is not being deleted waits on
	// an owner that is: the garbage collector deletes it once the owner is
	// gone (background), first (foreground), or keeps it (orphan).
	CauseOwnerBeingDeleted = "OwnerBeingDeleted"
)

// notTerminating explains an object without a deletionTimestamp: it is not
// being deleted, but an owner of it may be, and the garbage collector then
// deletes it only once that owner is gone, which the owner's finalizers can
// hold back for ever. Each such owner is explained below it.
func (e *Explainer) notTerminating(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object, depth int) Finding {
	ref := refOf(gvr, gvk, obj)
	fd := Finding{Cause: CauseNotTerminating, Severity: SeverityInfo, Object: &ref, Message: fmt.Sprintf("%s is not being deleted", ref)}
	if depth > maxDepth {
		return fd
	}
	refs := obj.GetOwnerReferences()
	deleting, remaining := 0, 0
	for _, or := range refs {
		gv, err := schema.ParseGroupVersion(or.APIVersion)
		if err != nil {
			continue
		}
		m := e.c.MapKind(gv.WithKind(or.Kind))
		if m == nil {
			continue
		}
		ns := ""
		if m.Namespaced {
			ns = obj.GetNamespace()
		}
		owner, err := e.c.MetaGet(ctx, m.GVR, ns, or.Name)
		if apierrors.IsNotFound(err) || (err == nil && owner.UID != or.UID) {
			continue // E4 (ownerrefs.go) says what a dangling reference means.
		}
		if err != nil {
			continue
		}
		if owner.DeletionTimestamp == nil {
			remaining++
			continue
		}
		deleting++
		oref := refOf(m.GVR, gv.WithKind(or.Kind), owner)
		of := Finding{Cause: CauseOwnerBeingDeleted, Severity: SeverityWaiting, Object: &oref}
		switch {
		case slices.Contains(owner.Finalizers, metav1.FinalizerOrphanDependents):
			of.Message = fmt.Sprintf("its owner %s is being deleted with propagationPolicy=Orphan: this object is meant to stay; the garbage collector removes its ownerReference, then the owner's orphan finalizer", oref)
		case slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents):
			of.Message = fmt.Sprintf("its owner %s is being deleted with propagationPolicy=Foreground: the garbage collector deletes this object first", oref)
		default:
			of.Message = fmt.Sprintf("its owner %s is being deleted (since %s) but is still there, held by finalizers %v: the garbage collector deletes this object only once the owner is gone", oref, Age(e.now.Sub(owner.DeletionTimestamp.Time)), owner.Finalizers)
			of.Remedy = "fix what holds the owner (below); this object then goes with it"
		}
		of.Children = e.objectFindings(ctx, m.GVR, gv.WithKind(or.Kind), owner, depth+1)
		for _, c := range of.Children {
			if c.Severity == SeverityBlocker || hasBlocker(c.Children) {
				of.Severity = SeverityBlocker
				of.FixOwner = "see the owner's findings"
			}
		}
		fd.Children = append(fd.Children, of)
	}
	if deleting > 0 {
		fd.Message = fmt.Sprintf("%s is not being deleted itself; %d of its owners are", ref, deleting)
		if remaining > 0 {
			fd.Message += fmt.Sprintf(", and %d other owner(s) that are not keep it even once they are gone", remaining)
		}
	}
	return fd
}

// hasBlocker says whether a blocker sits anywhere in fs.
func hasBlocker(fs []Finding) bool {
	found := false
	WalkFindings(fs, func(f *Finding) {
		if f.Severity == SeverityBlocker {
			found = true
		}
	})
	return found
}

// deletionPending is true when the report's target is being deleted, or
// waits on an owner that is: the liveness of the controllers the chain
// waits on matters then.
func deletionPending(rep *Report) bool {
	if rep.Terminating {
		return true
	}
	pending := false
	WalkFindings(rep.Findings, func(f *Finding) {
		if f.Cause == CauseOwnerBeingDeleted {
			pending = true
		}
	})
	return pending
}
