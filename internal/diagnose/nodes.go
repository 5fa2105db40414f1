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
	"k8s.io/apimachinery/pkg/labels"
)

// Causes of this family (see report.go).
const (
	CauseNodeDrainBlocked  = "NodeDrainBlocked"  // D5
	CauseDrainBlockedByPDB = "DrainBlockedByPDB" // D5
)

// nodesEntries are the finalizers of Nodes (D5).
var nodesEntries = []Entry{
	{Finalizer: "karpenter.sh/termination", Component: "Karpenter", Workloads: []string{"karpenter"}, ID: "D5",
		Remedy: "fix the PodDisruptionBudgets blocking the drain, or the instance termination", Leaks: "the cloud instance", Strip: StripRisky},
	{Finalizer: "karpenter.k8s.aws/termination", Component: "Karpenter", Workloads: []string{"karpenter"}, ID: "D5",
		Remedy: "fix Karpenter", Leaks: "cloud resources of the node class", Strip: StripRisky},
	// Any finalizer on a Node: its owner (often a node lifecycle
	// controller) usually drains first; no ID, so it only adds the check.
	{Prefix: true, Kinds: []string{"Node"}, Resources: []string{"nodes"},
		Check: ownedThen(func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.nodeDrain(ctx, fd, s.Obj) })},
}

// nodeDrain: D5. A Node's own finalizer (Karpenter, Cluster API, ...) is
// removed once its controller has drained the node and terminated the
// instance. The drain stops at pods whose PodDisruptionBudget allows no
// disruption. With the owner gone, the owner is the root blocker and the
// budgets are only a warning of what comes next.
func (e *Explainer) nodeDrain(ctx context.Context, fd *Finding, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC || fd.Cause == CauseOrphanFinalizer {
		return
	}
	pods, err := e.c.PodsOnNode(ctx, obj.GetName())
	if err != nil {
		return
	}
	var drained []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || isDaemonPod(&p) {
			continue
		}
		drained = append(drained, p)
	}
	if len(drained) == 0 {
		return
	}
	gone := ownerGone(fd)
	pdbs, err := e.c.PodDisruptionBudgets(ctx, "")
	if err != nil {
		return
	}
	blocked := 0
	for i := range pdbs {
		b := &pdbs[i]
		if b.Status.DisruptionsAllowed > 0 || b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		var covered []string
		for _, p := range drained {
			if p.Namespace == b.Namespace && sel.Matches(labels.Set(p.Labels)) {
				covered = append(covered, p.Name)
			}
		}
		if len(covered) == 0 {
			continue
		}
		blocked += len(covered)
		ref := ObjectRef{APIVersion: "policy/v1", Kind: "PodDisruptionBudget", Resource: "poddisruptionbudgets", Namespace: b.Namespace, Name: b.Name, UID: string(b.UID)}
		c := Finding{Cause: CauseDrainBlockedByPDB, Catalog: "D5", Severity: SeverityBlocker, Object: &ref,
			Message: fmt.Sprintf("%s allows 0 disruptions (%d healthy, %d required) and covers pod(s) %s on the node: the drain cannot evict them",
				ref, b.Status.CurrentHealthy, b.Status.DesiredHealthy, strings.Join(covered, ", ")),
			FixOwner: "the owner of the workload behind the budget",
			Remedy:   "make one disruption possible: scale the workload up or fix its unhealthy pods, or relax minAvailable/maxUnavailable; Karpenter's NodePool terminationGracePeriod bounds how long a drain may wait",
			Leaks:    "nothing: this is the drain doing its job"}
		if refused := e.evictionsRefused(ctx, drained, covered); len(refused) > 0 {
			c.Message += "; the API server refuses their eviction (dry-run): " + strings.Join(refused, "; ")
		}
		if gone {
			c.Severity = SeverityWarning
			c.Message += " (once its owner runs again)"
		}
		fd.Children = append(fd.Children, c)
	}
	drainMsg := fmt.Sprintf("%d pod(s) still run on the node (DaemonSet pods aside)", len(drained))
	switch {
	case gone:
		fd.Message += "; " + drainMsg
	case blocked > 0:
		fd.Cause, fd.Catalog, fd.Severity = CauseNodeDrainBlocked, "D5", SeverityBlocker
		fd.Message = fmt.Sprintf("%s owns %q and drains the node before terminating its instance; %s, %d of them protected by PodDisruptionBudgets that allow no disruption", orUnknown(fd.Owner.Component), fd.Finalizer, drainMsg, blocked)
		fd.FixOwner = "workload owner (the budgets below); cluster-autoscaling owner"
		fd.Remedy = "let the drain through (the budgets below); releasing the finalizer skips the drain and leaks the cloud instance"
	default:
		fd.Message += "; " + drainMsg + ": the drain is in progress"
	}
}

func isDaemonPod(p *corev1.Pod) bool {
	for _, r := range p.OwnerReferences {
		if r.Kind == "DaemonSet" && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}
