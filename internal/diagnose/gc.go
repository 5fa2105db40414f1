/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Causes of this family (see report.go).
const (
	CauseForegroundDependents       = "ForegroundWaitingOnDependents"  // E1
	CauseGCIdle                     = "GarbageCollectorNotProgressing" // E2
	CauseOrphanDependentUnpatchable = "OrphanDependentUnpatchable"     // E3
)

// gcEntries are the garbage collector's finalizers.
var gcEntries = []Entry{
	{Finalizer: "foregroundDeletion", Component: "garbage collector (kube-controller-manager)", BuiltIn: true, ID: "E1",
		Remedy: "fix the blocking dependents; or re-issue DELETE with propagationPolicy=Background (dependents are then deleted in the background)",
		Leaks:  "nothing once no blocking dependent remains; otherwise the dependents are deleted in the background instead of first", Strip: StripLowRisk,
		Check: func(e *Explainer, ctx context.Context, fd *Finding, s subject) {
			e.foreground(ctx, fd, s.GVR, s.Obj, s.Depth)
		}},
	{Finalizer: "orphan", Component: "garbage collector (kube-controller-manager)", BuiltIn: true, ID: "E3",
		Remedy: "let the garbage collector remove the ownerReferences of the dependents; if a webhook rejects that patch, fix it",
		Leaks:  "dependents keep an ownerReference to a deleted owner and are then garbage collected instead of orphaned", Strip: StripRisky,
		Check: func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.orphan(ctx, fd, s.GVR, s.Obj) }},
}

// foreground: E1/E2.
func (e *Explainer) foreground(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object, depth int) {
	fd.Owner = &Owner{Component: "garbage collector (kube-controller-manager)", Source: SourceCatalog, State: OwnerUnknown}
	var blocking []kube.MetaItem
	for _, d := range e.c.Dependents(ctx, obj.GetNamespace(), obj.GetUID()) {
		for _, r := range d.Obj.OwnerReferences {
			if r.UID == obj.GetUID() && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				blocking = append(blocking, d)
				break
			}
		}
	}
	if len(blocking) > 0 && e.gcNeverDeleted(ctx, fd, obj, blocking) {
		return
	}
	if len(blocking) > 0 {
		fd.Cause, fd.Catalog = CauseForegroundDependents, "E1"
		fd.Message = fmt.Sprintf("foreground deletion waits for %d dependent(s) with blockOwnerDeletion=true", len(blocking))
		fd.FixOwner = "the root blocker's owner"
		for i, d := range blocking {
			if i == maxChildren {
				fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more dependents not shown", len(blocking)-maxChildren)})
				break
			}
			fd.Children = append(fd.Children, e.dependentNode(ctx, d, depth+1))
		}
		if kcm := e.kcmLiveness(ctx); kcm.Stopped() {
			// Even once the dependents go, nothing removes the finalizer.
			fd.Owner.State, fd.Owner.Evidence = kcm.ownerState(), []string{kcm.Evidence}
			fd.Children = append(fd.Children, Finding{Cause: CauseGCIdle, Catalog: "E2", Severity: SeverityBlocker, Object: fd.Object, Finalizer: fd.Finalizer,
				Message:  "the garbage collector deletes the dependents and then removes foregroundDeletion, but " + kcm.why() + "; until it is back the garbage collector removes no foregroundDeletion or orphan finalizer",
				FixOwner: "cluster operator",
				Remedy:   "bring kube-controller-manager back: " + kcmCheck,
				Leaks:    "nothing yet; removing the finalizer now would leave the dependents behind with an ownerReference to a deleted owner"})
		}
		return
	}
	e.gcIdle(ctx, fd, obj, "no dependent with blockOwnerDeletion=true remains")
}

func (e *Explainer) gcIdle(ctx context.Context, fd *Finding, obj metav1.Object, why string) {
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Cause, fd.Catalog = CauseGCIdle, "E2"
	fd.Message = fmt.Sprintf("%s; the garbage collector should remove %q (deleting for %s)", why, fd.Finalizer, Age(since))
	fd.FixOwner = "cluster operator"
	fd.Remedy = "check kube-controller-manager and CRDs with broken conversion webhooks; removing the finalizer is low-risk once nothing depends on it"
	fd.Leaks = "nothing: the garbage collector finalizers only gate dependents"
	fd.Severity = SeverityWaiting
	if e.gcStalled(ctx, fd, obj) {
		fd.Severity = SeverityBlocker
		fd.Message += ": it is not progressing (" + e.gcStallEvidence(ctx) + ")"
		if e.kcmLiveness(ctx).Stopped() {
			fd.Remedy = "bring kube-controller-manager back: " + kcmCheck + "; its garbage collector then removes the finalizer. Removing the finalizer yourself is low-risk once nothing depends on it"
		}
	}
}

// gcStalled says whether the garbage collector had time enough to act on
// obj's deletion: longer ago than --gc-stall-after, or at once when
// kube-controller-manager's Lease is stale. A readable Lease becomes the
// evidence of fd's owner.
func (e *Explainer) gcStalled(ctx context.Context, fd *Finding, obj metav1.Object) bool {
	kcm := e.kcmLiveness(ctx)
	if state := kcm.ownerState(); state != OwnerUnknown && fd != nil && fd.Owner != nil {
		fd.Owner.State, fd.Owner.Evidence = state, []string{kcm.Evidence}
	}
	return e.now.Sub(obj.GetDeletionTimestamp().Time) > e.gcStallAfter || kcm.Stopped()
}

// gcStallEvidence says why gcStalled judged the garbage collector stuck.
func (e *Explainer) gcStallEvidence(ctx context.Context) string {
	if kcm := e.kcmLiveness(ctx); kcm.Stopped() {
		return kcm.why() + "; until it is back the garbage collector removes no foregroundDeletion or orphan finalizer"
	}
	return fmt.Sprintf("longer than the %s it is given, --gc-stall-after", e.gcStallAfter)
}

// gcNeverDeleted: E2 for a foreground owner whose blocking dependents the
// garbage collector has not even started deleting. It deletes every
// dependent of an owner marked foregroundDeletion within seconds, so none of
// them terminating once the owner has been deleting for longer than
// --gc-stall-after (or with kube-controller-manager's Lease stale) means it
// is not running (left out of --controllers, kube-controller-manager down)
// or not progressing (informers not synced). It reports false, leaving fd
// alone, when that is not the case: the dependents are then E1's.
func (e *Explainer) gcNeverDeleted(ctx context.Context, fd *Finding, obj metav1.Object, blocking []kube.MetaItem) bool {
	for _, d := range blocking {
		if d.Obj.DeletionTimestamp != nil {
			return false
		}
	}
	if !e.gcStalled(ctx, nil, obj) {
		return false
	}
	e.gcStalled(ctx, fd, obj)
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Cause, fd.Catalog = CauseGCIdle, "E2"
	fd.Severity = SeverityBlocker
	fd.Message = fmt.Sprintf("foreground deletion waits for %d dependent(s) with blockOwnerDeletion=true, but the garbage collector has deleted none of them in %s (%s); it deletes them within seconds of a foreground deletion, so it is not running or not progressing",
		len(blocking), Age(since), e.gcStallEvidence(ctx))
	fd.FixOwner = "cluster operator"
	fd.Remedy = "run kube-controller-manager with the garbage collector (check its --controllers flag, and its log for informers that do not sync, such as CRDs with broken conversion webhooks); it then deletes the dependents and removes the finalizer. Without it nothing removes the finalizer: delete the dependents yourself, then remove foregroundDeletion, which is low-risk once nothing depends on the owner"
	if e.kcmLiveness(ctx).Stopped() {
		fd.Remedy = "bring kube-controller-manager back: " + kcmCheck + "; its garbage collector then deletes the dependents and removes the finalizer. Without it nothing removes the finalizer: delete the dependents yourself, then remove foregroundDeletion, which is low-risk once nothing depends on the owner"
	}
	fd.Leaks = "nothing yet; removing the finalizer now would leave the dependents behind with an ownerReference to a deleted owner, for a garbage collector to delete later"
	for i, d := range blocking {
		if i == maxChildren {
			fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more dependents not shown", len(blocking)-maxChildren)})
			break
		}
		ref := ItemRef(d)
		fd.Children = append(fd.Children, Finding{Cause: "BlockingDependent", Severity: SeverityWaiting, Object: &ref,
			Message: fmt.Sprintf("%s is not deleted: the garbage collector has not acted on it", ref)})
	}
	return true
}

// dependentNode explains one dependent an owner waits on.
func (e *Explainer) dependentNode(ctx context.Context, d kube.MetaItem, depth int) Finding {
	ref := ItemRef(d)
	gvk := d.Res.GVR.GroupVersion().WithKind(d.Res.Kind)
	n := Finding{Cause: "BlockingDependent", Severity: SeverityBlocker, Object: &ref}
	if d.Obj.DeletionTimestamp == nil {
		n.Severity = SeverityWaiting
		n.Message = fmt.Sprintf("%s is not deleted yet; the garbage collector deletes it next", ref)
		return n
	}
	n.Message = fmt.Sprintf("%s is terminating with finalizers %v", ref, d.Obj.Finalizers)
	n.Children = e.objectFindings(ctx, d.Res.GVR, gvk, &d.Obj, depth)
	if len(n.Children) == 0 {
		n.Severity = SeverityWaiting
	}
	return n
}

// orphan: E3.
func (e *Explainer) orphan(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object) {
	fd.Owner = &Owner{Component: "garbage collector (kube-controller-manager)", Source: SourceCatalog, State: OwnerUnknown}
	deps := e.c.Dependents(ctx, obj.GetNamespace(), obj.GetUID())
	if len(deps) == 0 {
		e.gcIdle(ctx, fd, obj, "no dependent still references it")
		return
	}
	fd.Cause, fd.Catalog = "OrphaningDependents", "E3"
	fd.Severity = SeverityWaiting
	fd.Message = fmt.Sprintf("the garbage collector must remove the ownerReference from %d dependent(s) first", len(deps))
	for i, d := range deps {
		// The dry-runs are one request per dependent: status, explaining
		// a whole cluster, leaves them to explain (WithoutRemovalDryRun).
		if i == maxChildren || e.skipDryRun {
			break
		}
		ref := ItemRef(d)
		idx := -1
		for j, r := range d.Obj.OwnerReferences {
			if r.UID == obj.GetUID() {
				idx = j
			}
		}
		patch, _ := json.Marshal([]map[string]any{
			{"op": "test", "path": fmt.Sprintf("/metadata/ownerReferences/%d/uid", idx), "value": string(obj.GetUID())},
			{"op": "remove", "path": fmt.Sprintf("/metadata/ownerReferences/%d", idx)},
		})
		err := e.c.DryRunOrphaning(ctx, d.Res.GVR, ref.Namespace, ref.Name, patch)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			fd.Severity = SeverityBlocker
			fd.Cause = CauseOrphanDependentUnpatchable
			fd.Children = append(fd.Children, Finding{Cause: CauseOrphanDependentUnpatchable, Catalog: "E3", Severity: SeverityBlocker, Object: &ref,
				Message:  "a dry-run of the patch removing its ownerReference is rejected: " + err.Error(),
				FixOwner: "webhook owner",
				Remedy:   "fix the webhook; or remove the ownerReference yourself (that is what orphaning does), then the garbage collector drops orphan",
				Leaks:    "nothing: orphaning keeps the dependents"})
		}
	}
	if fd.Severity == SeverityWaiting && e.gcStalled(ctx, nil, obj) {
		e.gcIdle(ctx, fd, obj, fmt.Sprintf("%d dependents still reference it although they can be patched", len(deps)))
		fd.Remedy = "fix kube-controller-manager's garbage collector (its --controllers flag; CRDs with broken conversion webhooks); without it, remove the ownerReference from the dependents yourself (that is what orphaning does), then remove orphan"
		if e.kcmLiveness(ctx).Stopped() {
			fd.Remedy = "bring kube-controller-manager back: " + kcmCheck + "; its garbage collector then orphans the dependents and removes the finalizer. Without it, remove the ownerReference from the dependents yourself (that is what orphaning does), then remove orphan"
		}
		fd.Leaks = "nothing once the dependents no longer reference it; removing orphan first lets a garbage collector delete the dependents later, which orphaning was meant to prevent"
	}
}
