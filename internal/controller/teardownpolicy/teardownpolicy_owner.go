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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
)

// checkOwner makes sure pol owns its key: of every policy whose key and
// target kinds overlap it, only the one that outranks the others is served
// (policy.Claim: cluster over namespaced, in force over new, then age).
func (r *Reconciler) checkOwner(ctx context.Context, pol *policy.Policy, status *teardownv1alpha1.TeardownPolicyStatus) (metav1.Condition, bool) {
	mine := policy.Claim{Ref: pol.Ref, Created: pol.Created, Key: pol.Key, Kinds: pol.Kinds(), Serving: policy.InForce(status, pol.Key)}
	owner, err := r.ownerOf(ctx, mine)
	if err != nil {
		return notReady(teardownv1alpha1.FinalizerConflictReason, "finding who owns finalizer %s: %s", pol.Key, err), false
	}
	if owner.Ref != pol.Ref {
		return notReady(teardownv1alpha1.FinalizerConflictReason,
			"%s owns finalizer %s for the same kinds (%s); this policy is not served while it does, and only finishes the teardowns it started", owner.Ref, pol.Key, outranksWhy(owner, mine)), false
	}
	return metav1.Condition{}, true
}

// ownerOf returns the owner of mine's key, read from the policies in the
// cache, so every replica and every restart decides alike.
func (r *Reconciler) ownerOf(ctx context.Context, mine policy.Claim) (policy.Claim, error) {
	var claims []policy.Claim
	// The claims are read, never kept: no copy of every policy that claims
	// the key (a tenant's few hundred of them sharing one key would
	// otherwise be copied at every reconcile of each).
	err := r.eachPolicy(ctx, func(p client.Object) bool {
		claims = append(claims, policy.ClaimsOf(p)...)
		return true
	}, client.MatchingFields{claimedKeyIndex: mine.Key}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return policy.Claim{}, err
	}
	return policy.Owner(mine, claims), nil
}

// The cache's indexes of the policies: checking one policy's key, or
// whether a policy exists, reads only the policies concerned, not all of
// them (a thousand policies checked one by one would otherwise copy a
// thousand each).
const (
	// claimedKeyIndex: every key a policy claims (policy.ClaimsOf).
	claimedKeyIndex = "teardown.dev/claimed-key"
	uidIndex        = "metadata.uid"
)

// indexPolicies adds claimedKeyIndex, uidIndex and steps.StartedIndex to
// the cache, for both kinds.
func indexPolicies(ctx context.Context, indexer client.FieldIndexer) error {
	for _, obj := range []client.Object{&teardownv1alpha1.TeardownPolicy{}, &teardownv1alpha1.ClusterTeardownPolicy{}} {
		if err := indexer.IndexField(ctx, obj, claimedKeyIndex, claimedKeys); err != nil {
			return fmt.Errorf("indexing %T by key: %w", obj, err)
		}
		if err := indexer.IndexField(ctx, obj, uidIndex, func(o client.Object) []string { return []string{string(o.GetUID())} }); err != nil {
			return fmt.Errorf("indexing %T by UID: %w", obj, err)
		}
		if err := indexer.IndexField(ctx, obj, steps.StartedIndex, steps.StartedIndexValues); err != nil {
			return fmt.Errorf("indexing %T by the teardowns it started: %w", obj, err)
		}
	}
	return nil
}

func claimedKeys(o client.Object) []string {
	var keys []string
	for _, c := range policy.ClaimsOf(o) {
		if !slices.Contains(keys, c.Key) {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// eachPolicy calls fn with every policy of both kinds in the cache that
// opts select, until fn returns false.
func (r *Reconciler) eachPolicy(ctx context.Context, fn func(client.Object) bool, opts ...client.ListOption) error {
	namespaced := &teardownv1alpha1.TeardownPolicyList{}
	if err := r.client.List(ctx, namespaced, opts...); err != nil {
		return fmt.Errorf("listing policies: %w", err)
	}
	for i := range namespaced.Items {
		if !fn(&namespaced.Items[i]) {
			return nil
		}
	}
	cluster := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := r.client.List(ctx, cluster, opts...); err != nil {
		return fmt.Errorf("listing policies: %w", err)
	}
	for i := range cluster.Items {
		if !fn(&cluster.Items[i]) {
			return nil
		}
	}
	return nil
}

// outranksWhy says why owner's claim outranks mine, for the condition.
func outranksWhy(owner, mine policy.Claim) string {
	switch {
	case owner.Ref.Kind == policy.KindCluster && mine.Ref.Kind != policy.KindCluster:
		return "a ClusterTeardownPolicy outranks a TeardownPolicy"
	case owner.Serving && !mine.Serving:
		return "it is in force with it"
	case !owner.Created.Equal(mine.Created):
		return "it was created earlier"
	}
	return "created in the same second, and its name sorts first"
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
		err := guarded.EachCached(ctx, r.Manager.GetCache(), gvk, pol.Ref.Namespace, func(obj *metav1.PartialObjectMetadata) bool {
			if !slices.Contains(obj.Finalizers, pol.Key) {
				return true
			}
			if pol.Ref.Kind == policy.KindCluster && obj.GetNamespace() != "" {
				// A tenant may put any key on objects of its namespace: that
				// must not unserve a ClusterTeardownPolicy everywhere. The
				// policy never touches what it does not select or attach.
				return true
			}
			nsLabels, err := r.nsLabelsFor(ctx, pol, obj)
			if err != nil {
				cond := notReady(teardownv1alpha1.ForbiddenReason, "%s", err)
				refused = &cond
				return false
			}
			if !guarded.Owns(served, served.Keys[0], gvk, obj, nsLabels, guarded.ProvenBy(obj, pol.Key, r.proofs())) {
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

// PolicyExists reports whether a policy of either kind with this UID is in
// the cache: a teardown it started waits for it to be served instead of
// being taken over by another policy.
func (r *Reconciler) PolicyExists(ctx context.Context, uid types.UID) (bool, error) {
	found := false
	err := r.eachPolicy(ctx, func(p client.Object) bool {
		found = p.GetUID() == uid
		return !found
	}, client.MatchingFields{uidIndex: string(uid)})
	return found, err
}

// proofs is the runner's Starters: who started a teardown, from the
// policies' status.startedTeardowns, else the object's records as its keys
// prove them, and who attached a key.
func (r *Reconciler) proofs() guarded.Proofs {
	if r.Runner == nil {
		return steps.Records{}
	}
	return r.Runner.Starters
}

// nsLabelsFor reads obj's namespace labels when pol selects namespaces.
func (r *Reconciler) nsLabelsFor(ctx context.Context, pol *policy.Policy, obj metav1.Object) (map[string]string, error) {
	if obj.GetNamespace() == "" || !slices.ContainsFunc(pol.Targets, func(t policy.Selector) bool { return t.NamespaceSelector != nil }) {
		return nil, nil
	}
	return guarded.NamespaceLabels(ctx, r.client, obj.GetNamespace())
}
