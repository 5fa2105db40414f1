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
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Causes of this family (see report.go).
const (
	CausePVCInUse            = "PVCInUse"                   // C1
	CausePVBound             = "PVBound"                    // C2
	CauseVolumeDetachBlocked = "VolumeDetachBlocked"        // C4
	CauseCloneInProgress     = "CloneInProgress"            // C6
	CauseVACInUse            = "VolumeAttributesClassInUse" // C11
)

// volumesEntries are the storage finalizers (C1–C6, C11).
var volumesEntries = []Entry{
	{Finalizer: "kubernetes.io/pvc-protection", Kinds: []string{"PersistentVolumeClaim"}, Component: "pvc-protection controller (kube-controller-manager)", BuiltIn: true, ID: "C1",
		Remedy: "delete or finish the pods that use the claim (including Completed/Failed ones)",
		Leaks:  "the volume may still be mounted and written by a pod", Strip: StripRisky,
		Resources: []string{"persistentvolumeclaims"},
		Check: func(e *Explainer, ctx context.Context, fd *Finding, s subject) {
			e.pvcProtection(ctx, fd, s.Obj, s.Depth)
		}},
	{Finalizer: "kubernetes.io/pv-protection", Kinds: []string{"PersistentVolume"}, Component: "pv-protection controller (kube-controller-manager)", BuiltIn: true, ID: "C2",
		Remedy: "delete the bound PersistentVolumeClaim first", Leaks: "a volume still bound to a claim", Strip: StripRisky,
		Resources: []string{"persistentvolumes"},
		Check: func(e *Explainer, ctx context.Context, fd *Finding, s subject) {
			e.pvProtection(ctx, fd, s.Obj)
			e.boundClaim(ctx, fd, s) // chains.go
		}},
	{Finalizer: "kubernetes.io/vac-protection", Kinds: []string{"VolumeAttributesClass"}, Component: "vac-protection controller (kube-controller-manager)", BuiltIn: true, ID: "C11",
		Remedy: "point the PVCs and PVs that still reference the VolumeAttributesClass at another class, or delete them",
		Leaks:  "the PVCs and PVs keep naming a class that no longer exists: modifying their volumes fails until they name another one", Strip: StripRisky,
		Resources: []string{"volumeattributesclasses.storage.k8s.io"},
		Check:     func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.vacProtection(ctx, fd, s.Obj) }},
	{Finalizer: "kubernetes.io/pv-controller", Kinds: []string{"PersistentVolume"}, Component: "PV controller (kube-controller-manager)", BuiltIn: true, ID: "C3",
		Remedy: "fix the in-tree volume plugin so the backend volume is deleted", Leaks: "the backend storage volume", Strip: StripRisky},
	{Finalizer: "external-provisioner.volume.kubernetes.io/finalizer", Component: "CSI external-provisioner", Workloads: []string{"csi-provisioner", "external-provisioner"}, ID: "C3",
		Remedy: "fix the CSI driver's controller so DeleteVolume succeeds; strip only if the backend volume is gone already",
		Leaks:  "the backend storage volume", Strip: StripRisky},
	{Finalizer: "external-attacher/", Prefix: true, Component: "CSI external-attacher", Workloads: []string{"csi-attacher", "external-attacher"}, ID: "C4",
		Remedy: "recover the node, or taint a confirmed-dead node node.kubernetes.io/out-of-service=nodeshutdown:NoExecute so the volume is force-detached",
		Leaks:  "a volume attached to a node", Strip: StripRisky,
		Resources: []string{"volumeattachments.storage.k8s.io", "persistentvolumes"},
		Check:     ownedThen(func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.volumeDetach(ctx, fd, s.GVR, s.Obj) })},
	{Finalizer: "provisioner.storage.kubernetes.io/cloning-protection", Kinds: []string{"PersistentVolumeClaim"}, Component: "CSI external-provisioner", Workloads: []string{"csi-provisioner"}, ID: "C6",
		Remedy: "finish or delete the clone PVCs that use this claim as their dataSource",
		Leaks:  "a clone still being provisioned from this claim may fail, or copy a volume being deleted", Strip: StripRisky,
		Resources: []string{"persistentvolumeclaims"},
		Check:     ownedThen(func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.cloningProtection(ctx, fd, s.Obj) })},
	{Finalizer: "snapshot.storage.kubernetes.io/", Prefix: true, Component: "snapshot-controller (external-snapshotter)", Workloads: []string{"snapshot-controller"}, ID: "C5",
		Remedy: "finish or cancel the restore or snapshot in progress; install or fix the snapshot-controller", Leaks: "a storage snapshot", Strip: StripRisky},
}

// pvcProtection: C1.
func (e *Explainer) pvcProtection(ctx context.Context, fd *Finding, obj metav1.Object, depth int) {
	fd.Owner = &Owner{Component: "pvc-protection controller (kube-controller-manager)", Source: SourceCatalog, State: OwnerUnknown}
	pods, err := e.c.Pods(ctx, obj.GetNamespace())
	if err != nil {
		fd.Cause, fd.Message = CausePVCInUse, "could not list pods: "+err.Error()
		return
	}
	fd.Cause = CausePVCInUse
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == obj.GetName() {
				fd.Children = append(fd.Children, e.claimUser(ctx, &p, depth)) // chains.go
			}
		}
	}
	fd.Message = fmt.Sprintf("%d scheduled pod(s) use the claim", len(fd.Children))
	if len(fd.Children) == 0 {
		fd.Severity = SeverityWaiting
		fd.Message = "no scheduled pod uses the claim; the pvc-protection controller should remove the finalizer"
	}
}

// pvProtection: C2.
func (e *Explainer) pvProtection(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause = CausePVBound
	fd.Owner = &Owner{Component: "pv-protection controller (kube-controller-manager)", Source: SourceCatalog, State: OwnerUnknown}
	pv, err := kube.Typed[corev1.PersistentVolume](ctx, e.c, corev1.SchemeGroupVersion.WithResource("persistentvolumes"), "", obj.GetName())
	if err != nil {
		fd.Message = "could not read the PersistentVolume: " + err.Error()
		return
	}
	if pv.Status.Phase == corev1.VolumeBound && pv.Spec.ClaimRef != nil {
		fd.Message = fmt.Sprintf("the volume is Bound to claim %s/%s", pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
		return
	}
	fd.Severity = SeverityWaiting
	fd.Message = fmt.Sprintf("the volume is %s; the pv-protection controller should remove the finalizer", pv.Status.Phase)
}

// vacProtection: C11. The vac-protection controller removes its finalizer once
// no PV (spec) and no PVC (spec, status.currentVolumeAttributesClassName,
// status.modifyVolumeStatus.targetVolumeAttributesClassName) names the class.
func (e *Explainer) vacProtection(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause, fd.Catalog = CauseVACInUse, "C11"
	fd.Owner = e.builtInOwner(ctx, "vac-protection controller (kube-controller-manager)")
	fd.FixOwner = "the owners of the claims and volumes that use the class"
	name := obj.GetName()
	users := 0
	add := func(ref ObjectRef, where, remedy string) {
		users++
		if users == maxChildren+1 {
			fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: "more references not shown"})
		}
		if users > maxChildren {
			return
		}
		fd.Children = append(fd.Children, Finding{Cause: CauseVACInUse, Catalog: "C11", Severity: SeverityBlocker, Object: &ref,
			Message: fmt.Sprintf("%s names the class in %s", ref, where), FixOwner: "the owner of " + ref.String(), Remedy: remedy})
	}
	pvcs, err := e.c.PersistentVolumeClaims(ctx, "")
	if err != nil {
		fd.Message = "could not list PersistentVolumeClaims: " + err.Error()
		return
	}
	for _, c := range pvcs {
		var where []string
		if c.Spec.VolumeAttributesClassName != nil && *c.Spec.VolumeAttributesClassName == name {
			where = append(where, "spec.volumeAttributesClassName")
		}
		if c.Status.CurrentVolumeAttributesClassName != nil && *c.Status.CurrentVolumeAttributesClassName == name {
			where = append(where, "status.currentVolumeAttributesClassName")
		}
		if m := c.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName == name {
			where = append(where, "status.modifyVolumeStatus (a modification in progress)")
		}
		if len(where) == 0 {
			continue
		}
		ref := ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: c.Namespace, Name: c.Name, UID: string(c.UID)}
		add(ref, strings.Join(where, ", "), fmt.Sprintf("point the claim at another class (kubectl patch pvc %s -n %s --type merge -p '{\"spec\":{\"volumeAttributesClassName\":\"OTHER\"}}') and let the modification finish, or delete the claim", c.Name, c.Namespace))
	}
	if pvs, err := e.c.PersistentVolumes(ctx); err == nil {
		for _, v := range pvs {
			if v.Spec.VolumeAttributesClassName != nil && *v.Spec.VolumeAttributesClassName == name {
				ref := ObjectRef{APIVersion: "v1", Kind: "PersistentVolume", Resource: "persistentvolumes", Name: v.Name, UID: string(v.UID)}
				add(ref, "spec.volumeAttributesClassName", "change its claim's class (the volume follows once modified), or delete the volume")
			}
		}
	}
	if users > 0 {
		fd.Message = fmt.Sprintf("%d claim(s) or volume(s) still use VolumeAttributesClass %s; the vac-protection controller removes the finalizer once none does", users, name)
		return
	}
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Severity = SeverityWaiting
	fd.Message = fmt.Sprintf("no claim or volume uses the class any more; the vac-protection controller should remove the finalizer (deleting for %s; %s)", Age(since), fd.Owner.Evidence[0])
	if since > DefaultGCStallAfter || fd.Owner.State == OwnerDown {
		fd.Severity = SeverityBlocker
		fd.FixOwner = "cluster operator (kube-controller-manager)"
		fd.Remedy = "check that kube-controller-manager runs its vac-protection controller; with nothing using the class, releasing the finalizer leaks nothing"
		fd.Leaks = "nothing: no claim or volume uses the class"
	}
}

// cloningProtection: C6. The CSI external-provisioner removes
// provisioner.storage.kubernetes.io/cloning-protection from a source claim
// once no claim cloned from it is still Pending.
func (e *Explainer) cloningProtection(ctx context.Context, fd *Finding, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC || fd.Cause == CauseOrphanFinalizer {
		return
	}
	pvcs, err := e.c.PersistentVolumeClaims(ctx, obj.GetNamespace())
	if err != nil {
		return
	}
	var clones []Finding
	for _, c := range pvcs {
		src := c.Spec.DataSource
		if src == nil && c.Spec.DataSourceRef != nil && (c.Spec.DataSourceRef.Namespace == nil || *c.Spec.DataSourceRef.Namespace == obj.GetNamespace()) {
			src = &corev1.TypedLocalObjectReference{APIGroup: c.Spec.DataSourceRef.APIGroup, Kind: c.Spec.DataSourceRef.Kind, Name: c.Spec.DataSourceRef.Name}
		}
		if src == nil || src.Kind != "PersistentVolumeClaim" || (src.APIGroup != nil && *src.APIGroup != "") || src.Name != obj.GetName() || c.Status.Phase == corev1.ClaimBound {
			continue
		}
		ref := ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: c.Namespace, Name: c.Name, UID: string(c.UID)}
		f := Finding{Cause: CauseCloneInProgress, Catalog: "C6", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("%s is cloned from this claim and is still %s", ref, orUnknown(string(c.Status.Phase))),
			FixOwner: "the owner of the clone; the CSI driver's owner",
			Remedy:   fmt.Sprintf("let the clone finish (its events say why it is Pending), or delete it: kubectl delete pvc %s -n %s", c.Name, c.Namespace),
			Leaks:    "nothing once the clone is deleted; a clone finishing from a deleted source may fail"}
		if ownerGone(fd) {
			f.Severity = SeverityWarning
			f.Message += " (the provisioner cannot finish it while it is gone)"
		}
		clones = append(clones, f)
	}
	if len(clones) == 0 {
		return
	}
	fd.Children = append(fd.Children, clones...)
	if ownerGone(fd) {
		fd.Message += fmt.Sprintf("; %d clone(s) of this claim are still Pending", len(clones))
		return
	}
	fd.Cause, fd.Catalog, fd.Severity = CauseCloneInProgress, "C6", SeverityBlocker
	fd.Message = fmt.Sprintf("%s keeps this source claim until its %d Pending clone(s) are provisioned or deleted", orUnknown(fd.Owner.Component), len(clones))
	fd.FixOwner = "the owners of the clones"
	fd.Remedy = "finish or delete the clone claims below; then the provisioner removes the finalizer"
}

// volumeDetach: C4. The CSI external-attacher removes external-attacher/<driver>
// from a VolumeAttachment (and then from its PV) once the volume is
// detached from the node; it cannot detach from a node that is gone or not
// Ready, and reports failures in status.detachError.
func (e *Explainer) volumeDetach(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC || fd.Cause == CauseOrphanFinalizer {
		return
	}
	var vas []storagev1.VolumeAttachment
	if gvr.Resource == "volumeattachments" {
		va, err := e.c.VolumeAttachment(ctx, obj.GetName())
		if err != nil {
			return
		}
		vas = append(vas, *va)
	} else {
		l, err := e.c.VolumeAttachments(ctx)
		if err != nil {
			return
		}
		for _, va := range l {
			if va.Spec.Source.PersistentVolumeName != nil && *va.Spec.Source.PersistentVolumeName == obj.GetName() {
				vas = append(vas, va)
			}
		}
	}
	var problems []Finding
	for _, va := range vas {
		ref := ObjectRef{APIVersion: "storage.k8s.io/v1", Kind: "VolumeAttachment", Resource: "volumeattachments", Name: va.Name, UID: string(va.UID)}
		state := fmt.Sprintf("attached=%v", va.Status.Attached)
		if va.Status.DetachError != nil {
			state += ", detach error: " + va.Status.DetachError.Message
		}
		node, err := e.c.Node(ctx, va.Spec.NodeName)
		ready := corev1.ConditionUnknown
		if err == nil {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status
				}
			}
		}
		var f Finding
		switch {
		case apierrors.IsNotFound(err):
			f = Finding{Message: fmt.Sprintf("%s (%s) is on node %s, which no longer exists", ref, state, va.Spec.NodeName),
				FixOwner: "cluster operator", Remedy: "the attach-detach controller (kube-controller-manager) detaches volumes of deleted nodes; check it runs"}
		case err == nil && ready != corev1.ConditionTrue:
			f = Finding{Message: fmt.Sprintf("%s (%s) is on node %s, which is Ready=%s: the volume cannot be detached from it safely", ref, state, node.Name, ready),
				FixOwner: "node or infrastructure owner",
				Remedy:   fmt.Sprintf("recover the node; if it is confirmed dead, taint it so the volume is force-detached: kubectl taint node %s node.kubernetes.io/out-of-service=nodeshutdown:NoExecute", node.Name)}
		case va.Status.DetachError != nil:
			f = Finding{Message: fmt.Sprintf("%s cannot be detached from node %s: %s", ref, va.Spec.NodeName, va.Status.DetachError.Message),
				FixOwner: "CSI driver owner; storage admin", Remedy: "fix the CSI driver or the storage backend so ControllerUnpublishVolume succeeds"}
		default:
			continue
		}
		f.Cause, f.Catalog, f.Severity, f.Object = CauseVolumeDetachBlocked, "C4", SeverityBlocker, &ref
		f.Leaks = "a volume attached to a node: another node cannot attach it (data may still be written to it)"
		if ownerGone(fd) {
			f.Severity = SeverityWarning
		}
		problems = append(problems, f)
	}
	if len(problems) == 0 {
		return
	}
	fd.Children = append(fd.Children, problems...)
	if ownerGone(fd) {
		return
	}
	fd.Cause, fd.Catalog, fd.Severity = CauseVolumeDetachBlocked, "C4", SeverityBlocker
	fd.Message = fmt.Sprintf("%s removes %q once the volume is detached, and cannot detach it (%d attachment(s) below)", orUnknown(fd.Owner.Component), fd.Finalizer, len(problems))
	fd.FixOwner = "node or storage owner"
	fd.Remedy = "fix the attachments below; then the attacher detaches the volume and removes the finalizer"
}
