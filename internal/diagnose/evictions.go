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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

// evictionRefused asks the API server whether it would evict pod now, with
// a server-side dry-run of the eviction a drain sends (POST
// pods/eviction?dryRun=All: the API server runs every check, the budget's
// included, and changes nothing). It returns the API server's own words
// when it refuses with 429 Too Many Requests, which is what a
// PodDisruptionBudget allowing no disruption answers; ok is false when the
// question could not be asked (no right to create evictions: a read-only
// user) or got another answer.
func (e *Explainer) evictionRefused(ctx context.Context, pod *corev1.Pod) (why string, refused, ok bool) {
	err := e.c.DryRunEviction(ctx, pod.Namespace, pod.Name)
	switch {
	case err == nil:
		return "", false, true
	case !apierrors.IsTooManyRequests(err):
		return "", false, false
	}
	var causes []string
	if st, isStatus := err.(apierrors.APIStatus); isStatus && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			if c.Message != "" {
				causes = append(causes, c.Message)
			}
		}
	}
	why = err.Error()
	if len(causes) > 0 {
		why += " (" + strings.Join(causes, "; ") + ")"
	}
	return cleantext.Clean(why, maxSaid), true, true
}

// evictionsRefused is what the API server answers to the eviction of each
// of pods, as "pod: words", for those it refuses. Like the removal
// dry-run (B3), status leaves it to explain.
func (e *Explainer) evictionsRefused(ctx context.Context, pods []corev1.Pod, names []string) []string {
	if e.skipDryRun {
		return nil // status: one request per pod; explain asks
	}
	var out []string
	for i := range pods {
		if !containsString(names, pods[i].Name) {
			continue
		}
		if why, refused, ok := e.evictionRefused(ctx, &pods[i]); ok && refused {
			out = append(out, pods[i].Name+": "+why)
		}
	}
	return out
}

// CauseEvictionRefused: a pod on a node being drained that the API server
// refuses to evict, because a PodDisruptionBudget allows no disruption
// (D5, seen from the pod).
const CauseEvictionRefused = "EvictionRefused"

// evictionFinding explains a pod that is not being deleted although its
// node is being drained (cordoned, deleted, or tainted for removal by
// Karpenter or the cluster autoscaler): a drain evicts, and the API server
// refuses evictions a budget does not allow. The refusal is the API
// server's own answer to a dry-run eviction, and the budgets covering the
// pod are named with their status.
func (e *Explainer) evictionFinding(ctx context.Context, obj metav1.Object) (Finding, bool) {
	pod, err := e.c.Pod(ctx, obj.GetNamespace(), obj.GetName())
	if err != nil || pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return Finding{}, false
	}
	node, err := e.c.Node(ctx, pod.Spec.NodeName)
	if err != nil {
		return Finding{}, false
	}
	draining := ""
	switch {
	case node.DeletionTimestamp != nil:
		draining = "is being deleted"
	case node.Spec.Unschedulable:
		draining = "is cordoned (spec.unschedulable)"
	}
	for _, t := range node.Spec.Taints {
		if draining == "" && (t.Key == "karpenter.sh/disrupted" || t.Key == "ToBeDeletedByClusterAutoscaler") {
			draining = "is tainted " + t.Key + " for removal"
		}
	}
	if draining == "" {
		return Finding{}, false
	}
	why, refused, ok := e.evictionRefused(ctx, pod)
	if ok && !refused {
		return Finding{}, false
	}
	var budgets []string
	blocking := false
	if l, err := e.c.PodDisruptionBudgets(ctx, pod.Namespace); err == nil {
		for _, b := range l {
			if b.Spec.Selector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			budgets = append(budgets, fmt.Sprintf("PodDisruptionBudget %s/%s allows %d disruptions (%d healthy, %d required)",
				b.Namespace, b.Name, b.Status.DisruptionsAllowed, b.Status.CurrentHealthy, b.Status.DesiredHealthy))
			blocking = blocking || b.Status.DisruptionsAllowed == 0
		}
	}
	ref := ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	msg := fmt.Sprintf("its node %s %s, and the API server refuses to evict the pod (dry-run): %s", node.Name, draining, why)
	if !ok {
		// No right to ask (a read-only user): the budgets' status alone.
		if !blocking {
			return Finding{}, false
		}
		msg = fmt.Sprintf("its node %s %s, and a budget allows no disruption, so a drain cannot evict the pod (the eviction could not be asked as a dry-run)", node.Name, draining)
	}
	if len(budgets) > 0 {
		msg += "; " + strings.Join(budgets, "; ")
	}
	return Finding{Cause: CauseEvictionRefused, Catalog: "D5", Severity: SeverityBlocker, Object: &ref, Message: msg,
		FixOwner: "the owner of the workload behind the budget",
		Remedy:   "make one disruption possible: scale the workload up or fix its unhealthy pods, or relax the budget's minAvailable/maxUnavailable; the drain retries the eviction by itself. Deleting the pod by hand bypasses the budget and takes the workload below what it promised",
		Leaks:    "nothing: the budget is doing its job"}, true
}
