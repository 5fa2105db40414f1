/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/teardown-dev/teardown/internal/diagnose/signals"
)

// Chains followed to the end (issue 11, family 4): a PersistentVolume held
// by kubernetes.io/pv-protection waits on its claim, which waits (held by
// kubernetes.io/pvc-protection) on the pods that use it, which wait on
// their kubelet. The root cause is at the end of the chain, not "the claim
// still exists".

// Causes of the PV → PVC → pod chain.
const (
	// CauseBoundClaimExists: the claim a volume is bound to is not being
	// deleted; the volume stays until it is.
	CauseBoundClaimExists = "BoundClaimExists" // C2
	// CauseBoundClaimTerminating: the claim is being deleted but is held.
	CauseBoundClaimTerminating = "BoundClaimTerminating" // C2
)

var gvkPVC = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")

// boundClaim follows C2 to the claim the volume is bound to: the
// pv-protection controller keeps the volume while it is Bound, and the PV
// controller marks it Released only once the claim is gone.
func (e *Explainer) boundClaim(ctx context.Context, fd *Finding, s subject) {
	pv, err := e.c.PersistentVolume(ctx, s.Obj.GetName())
	if err != nil || pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef == nil {
		return
	}
	cr := pv.Spec.ClaimRef
	claim, err := e.c.PersistentVolumeClaim(ctx, cr.Namespace, cr.Name)
	if apierrors.IsNotFound(err) || (err == nil && cr.UID != "" && claim.UID != cr.UID) {
		fd.Severity = SeverityWaiting
		fd.Message += ", which no longer exists: the PV controller (persistentvolume-binder in kube-controller-manager) marks the volume Released next, then the pv-protection controller removes the finalizer"
		return
	}
	if err != nil {
		return
	}
	ref := ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: claim.Namespace, Name: claim.Name, UID: string(claim.UID)}
	if claim.DeletionTimestamp == nil {
		fd.Children = append(fd.Children, Finding{Cause: CauseBoundClaimExists, Catalog: "C2", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("%s is not being deleted: the volume stays Bound to it", ref),
			FixOwner: "the owner of the claim",
			Remedy:   fmt.Sprintf("delete the claim first (kubectl delete pvc %s -n %s), or keep the volume", claim.Name, claim.Namespace),
			Leaks:    "nothing yet; removing pv-protection instead deletes a volume a claim still uses"})
		return
	}
	f := Finding{Cause: CauseBoundClaimTerminating, Catalog: "C2", Severity: SeverityWaiting, Object: &ref,
		Message: fmt.Sprintf("%s is being deleted too (for %s), held by finalizers %v: the volume goes once the claim is gone", ref, Age(e.now.Sub(claim.DeletionTimestamp.Time)), claim.Finalizers),
		Remedy:  "fix what holds the claim (below); the volume follows"}
	f.Children = e.objectFindings(ctx, gvrPVC, gvkPVC, claim, s.Depth+1)
	if hasBlocker(f.Children) {
		f.Severity = SeverityBlocker
		f.FixOwner = "see the claim's findings"
	}
	fd.Children = append(fd.Children, f)
}

// claimUser is C1's finding about one scheduled pod that uses the claim:
// the pvc-protection controller keeps the claim while such a pod exists,
// whatever its phase, so the pod is the root cause unless something holds
// the pod itself (a kubelet that never confirms, a finalizer), which is
// then explained below it.
func (e *Explainer) claimUser(ctx context.Context, p *corev1.Pod, depth int) Finding {
	ref := ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
	f := Finding{Cause: CausePVCInUse, Catalog: "C1", Severity: SeverityBlocker, Object: &ref,
		Message: fmt.Sprintf("pod %s (phase %s, node %s) uses the claim", p.Name, p.Status.Phase, p.Spec.NodeName),
		Remedy:  "delete or finish the pod (Completed and Failed pods count too)"}
	if p.DeletionTimestamp == nil {
		f.Message += " and is not being deleted"
		f.FixOwner = "the owner of the pod (its controller, or whoever created it)"
		f.Remedy = fmt.Sprintf("delete or finish the pod (kubectl delete pod %s -n %s), or scale down its controller; Completed and Failed pods count too", p.Name, p.Namespace)
		if h, ok := signals.PodFailure(p); ok && p.Status.Phase != corev1.PodFailed {
			// A helper that fails and retries (an importer in a crash
			// loop) holds the claim for ever: its failure is why.
			f.Message += fmt.Sprintf("; it keeps failing (%s), so it never finishes on its own", h)
			f.Remedy = fmt.Sprintf("fix what its failure says, or delete it (kubectl delete pod %s -n %s) if its work is no longer wanted; Completed and Failed pods count too", p.Name, p.Namespace)
		}
		return f
	}
	f.Message += fmt.Sprintf(" and is being deleted (for %s) but is still there", Age(e.now.Sub(p.DeletionTimestamp.Time)))
	f.Children = e.objectFindings(ctx, gvrPod, corev1.SchemeGroupVersion.WithKind("Pod"), p, depth+1)
	if hasBlocker(f.Children) {
		f.Remedy = "fix what holds the pod (below); the claim is released once the pod is gone"
	} else if len(f.Children) > 0 {
		f.Severity = SeverityWaiting
		f.Remedy = "wait for the pod to go"
	}
	return f
}

var (
	gvrPVC = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	gvrPod = corev1.SchemeGroupVersion.WithResource("pods")
)
