/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller/target"
	"github.com/teardown-dev/teardown/internal/policy"
)

// checkOwner makes sure pol owns its key: of every policy whose key and
// target kinds overlap it, only the oldest is served.
func (r *Reconciler) checkOwner(ctx context.Context, pol *policy.Policy) (metav1.Condition, bool) {
	mine := policy.Claim{Ref: pol.Ref, Created: pol.Created, Key: pol.Key, Kinds: pol.Kinds()}
	owner, err := r.ownerOf(ctx, mine)
	if err != nil {
		return notReady(teardownv1alpha1.FinalizerConflictReason, "finding who owns finalizer %s: %s", pol.Key, err), false
	}
	if owner.Ref != pol.Ref {
		return notReady(teardownv1alpha1.FinalizerConflictReason,
			"%s, created earlier, owns finalizer %s for the same kinds; this policy is not served while it does", owner.Ref, pol.Key), false
	}
	return metav1.Condition{}, true
}

// ownerOf returns the owner of mine's key, read from the policies in the
// cache, so every replica and every restart decides alike.
func (r *Reconciler) ownerOf(ctx context.Context, mine policy.Claim) (policy.Claim, error) {
	var claims []policy.Claim
	namespaced := &teardownv1alpha1.TeardownPolicyList{}
	if err := r.client.List(ctx, namespaced); err != nil {
		return policy.Claim{}, fmt.Errorf("listing policies: %w", err)
	}
	for i := range namespaced.Items {
		if c, ok := policy.ClaimOf(&namespaced.Items[i]); ok {
			claims = append(claims, c)
		}
	}
	cluster := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := r.client.List(ctx, cluster); err != nil {
		return policy.Claim{}, fmt.Errorf("listing policies: %w", err)
	}
	for i := range cluster.Items {
		if c, ok := policy.ClaimOf(&cluster.Items[i]); ok {
			claims = append(claims, c)
		}
	}
	return policy.Owner(mine, claims), nil
}

// checkForeignKey refuses an Automatic policy whose key is already on
// objects it does not select and that Teardown never attached it to: the key
// is another controller's (or a manifest's), and serving the policy would
// take part in that controller's protocol.
func (r *Reconciler) checkForeignKey(ctx context.Context, pol *policy.Policy) (metav1.Condition, bool) {
	if pol.Attach != teardownv1alpha1.AttachAutomatic {
		return metav1.Condition{}, true
	}
	served := &policy.Served{Policy: pol, Keys: []policy.ServedKey{{Key: pol.Key, Kinds: pol.Kinds()}}}
	for _, gvk := range pol.Kinds() {
		var refused *metav1.Condition
		err := eachCached(ctx, r.Manager.GetCache(), gvk, pol.Ref.Namespace, func(obj *metav1.PartialObjectMetadata) bool {
			if !slices.Contains(obj.Finalizers, pol.Key) {
				return true
			}
			nsLabels, err := r.nsLabelsFor(ctx, pol, obj)
			if err != nil {
				cond := notReady(teardownv1alpha1.ForbiddenReason, "%s", err)
				refused = &cond
				return false
			}
			if !target.Owns(served, served.Keys[0], gvk, obj, nsLabels) {
				cond := notReady(teardownv1alpha1.FinalizerConflictReason,
					"finalizer %s is on %s %s, which this policy does not select and Teardown did not put there: another controller or a manifest uses this key; choose another",
					pol.Key, gvk.Kind, klog.KObj(obj))
				refused = &cond
				return false
			}
			return true
		})
		if err != nil {
			return notReady(teardownv1alpha1.ForbiddenReason, "listing %s: %s", gvk.Kind, err), false
		}
		if refused != nil {
			return *refused, false
		}
	}
	return metav1.Condition{}, true
}

// nsLabelsFor reads obj's namespace labels when pol selects namespaces.
func (r *Reconciler) nsLabelsFor(ctx context.Context, pol *policy.Policy, obj metav1.Object) (map[string]string, error) {
	if obj.GetNamespace() == "" || !slices.ContainsFunc(pol.Targets, func(t policy.Target) bool { return t.NamespaceSelector != nil }) {
		return nil, nil
	}
	return target.NamespaceLabels(ctx, r.client, obj.GetNamespace())
}
