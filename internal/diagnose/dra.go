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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Causes of this family (see report.go).
const (
	CauseResourceClaimInUse = "ResourceClaimInUse" // C12
)

// draEntries are the dynamic resource allocation finalizer (C12).
var draEntries = []Entry{
	{Finalizer: "resource.kubernetes.io/delete-protection", Kinds: []string{"ResourceClaim"}, Component: "resource claim controller (kube-controller-manager)", BuiltIn: true, ID: "C12",
		Remedy: "delete the pods that consume the ResourceClaim; fix the DRA driver",
		Leaks:  "devices still allocated (and maybe prepared on a node) to a claim that no longer exists: the scheduler may hand them out twice", Strip: StripRisky,
		Resources: []string{"resourceclaims.resource.k8s.io"},
		Check:     func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.resourceClaim(ctx, fd, s.Obj) }},
}

// resourceClaim: C12. The resource claim controller removes
// resource.kubernetes.io/delete-protection once no pod reserves the claim
// (it drops reservations of pods that are gone or finished) and the claim is
// deallocated.
func (e *Explainer) resourceClaim(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause, fd.Catalog = CauseResourceClaimInUse, "C12"
	fd.Owner = e.builtInOwner(ctx, "resource claim controller (kube-controller-manager)")
	fd.FixOwner = "the owners of the pods that use the claim; the DRA driver's owner"
	claim, err := e.c.ResourceClaim(ctx, obj.GetNamespace(), obj.GetName())
	if err != nil {
		fd.Message = "could not read the ResourceClaim: " + err.Error()
		return
	}
	var devices []string
	if a := claim.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			devices = append(devices, r.Driver+"/"+r.Pool+"/"+r.Device)
		}
	}
	stale := 0
	for _, r := range claim.Status.ReservedFor {
		if r.Resource != "pods" || r.APIGroup != "" {
			ref := ObjectRef{APIVersion: r.APIGroup, Kind: r.Resource, Resource: r.Resource, Namespace: claim.Namespace, Name: r.Name, UID: string(r.UID)}
			fd.Children = append(fd.Children, Finding{Cause: CauseResourceClaimInUse, Catalog: "C12", Severity: SeverityBlocker, Object: &ref,
				Message: fmt.Sprintf("%s %s reserves the claim", r.Resource, r.Name), FixOwner: "its owner", Remedy: "delete it, or have its controller release the claim"})
			continue
		}
		pod, err := e.c.Pod(ctx, claim.Namespace, r.Name)
		if err != nil || pod.UID != r.UID || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			stale++
			continue
		}
		ref := ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
		f := Finding{Cause: CauseResourceClaimInUse, Catalog: "C12", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("pod %s (phase %s, node %s) reserves the claim", pod.Name, pod.Status.Phase, orUnknown(pod.Spec.NodeName)),
			FixOwner: "the pod's owner",
			Remedy:   fmt.Sprintf("delete the pod (kubectl delete pod %s -n %s) or let it finish; the driver then unprepares the devices", pod.Name, pod.Namespace)}
		if pod.DeletionTimestamp != nil {
			obj := metav1.PartialObjectMetadata{ObjectMeta: pod.ObjectMeta}
			f.Message += "; it is terminating itself"
			f.Children = e.podFindings(ctx, &obj)
			if len(f.Children) > 0 && f.Children[0].Severity != SeverityBlocker {
				f.Severity = SeverityWaiting
			}
		}
		fd.Children = append(fd.Children, f)
	}
	alloc := "not allocated"
	if len(devices) > 0 {
		alloc = "allocated " + strings.Join(devices, ", ")
	}
	if len(fd.Children) > 0 {
		fd.Message = fmt.Sprintf("the claim is %s and reserved by %d consumer(s) that still run; the resource claim controller removes the finalizer once none does and the claim is deallocated", alloc, len(fd.Children))
		return
	}
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Severity = SeverityWaiting
	what := "deallocates it and removes the finalizer"
	if stale > 0 {
		what = fmt.Sprintf("drops the %d reservation(s) of pods that are gone or finished, deallocates it and removes the finalizer", stale)
	}
	fd.Message = fmt.Sprintf("the claim is %s and no running pod reserves it; the resource claim controller %s (deleting for %s; %s)", alloc, what, Age(since), fd.Owner.Evidence[0])
	if since > DefaultGCStallAfter || fd.Owner.State == OwnerDown {
		fd.Severity = SeverityBlocker
		fd.FixOwner = "cluster operator (kube-controller-manager)"
		fd.Remedy = "check that kube-controller-manager runs its resource claim controller, and the DRA driver's logs; releasing the finalizer leaves the devices' allocation to nobody"
	}
}
