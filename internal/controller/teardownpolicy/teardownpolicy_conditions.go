/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// setConditions writes the Ready condition of generation and the two that
// kstatus reads beside it, so that Flux's health checks, kubectl wait and
// Argo CD (docs/monitoring.md, "GitOps health") judge a policy as kubectl
// get shows it: Stalled mirrors a False Ready (a refused policy is Failed,
// not forever InProgress); Reconciling is True while a deleted policy
// finishes its teardowns. Neither is kept when it does not apply, as kstatus
// reads their presence.
func setConditions(status *teardownv1alpha1.TeardownPolicyStatus, ready metav1.Condition, generation int64, deleting bool) {
	ready.ObservedGeneration = generation
	meta.SetStatusCondition(&status.Conditions, ready)
	if ready.Status == metav1.ConditionFalse {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: teardownv1alpha1.StalledCondition, Status: metav1.ConditionTrue,
			Reason: ready.Reason, Message: ready.Message, ObservedGeneration: generation})
	} else {
		meta.RemoveStatusCondition(&status.Conditions, teardownv1alpha1.StalledCondition)
	}
	if deleting {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: teardownv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue,
			Reason: teardownv1alpha1.DeletingReason, Message: "deleted: finishing the teardowns it started", ObservedGeneration: generation})
	} else {
		meta.RemoveStatusCondition(&status.Conditions, teardownv1alpha1.ReconcilingCondition)
	}
}
