/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// releaseGuarded is the cleanup of a deleted policy. Objects not being
// deleted are released: the policy's own key where Teardown attached it or
// the object declares it and is selected, a retired key where Teardown
// attached it. Objects already being deleted finish their cleanup first
// (the target controller keeps running it), unless onPolicyDeletion says
// Release. In a namespace being deleted nothing is released: everything in
// it is about to be deleted and owed its cleanup.
func (r *Reconciler) releaseGuarded(ctx context.Context, o client.Object) finalizer.Result {
	obj, ok := o.(teardownv1alpha1.PolicyObject)
	if !ok {
		return finalizer.Done() // registered only on the policy kinds
	}
	s, ok := r.Index.Get(policy.RefOf(obj))
	if !ok || s.UID != obj.GetUID() {
		return r.unserved(ctx, obj)
	}
	terminating, err := guarded.NamespaceTerminating(ctx, r.reader, obj.GetNamespace())
	if err != nil {
		return finalizer.Retry(err)
	}
	if !terminating {
		released, err := r.releaseLive(ctx, s)
		s.Released.Add(int64(released))
		if err != nil {
			return finalizer.Retry(err)
		}
		if released > 0 {
			if r.Recorder != nil {
				r.Recorder.Eventf(obj, nil, "Normal", ReasonReleasedGuardedObjects, "Release",
					"Policy deleted: removed its finalizer from %d object(s) not being deleted", released)
			}
			// A target reconcile that read this policy before it was marked
			// deleting may attach its key after the list above (model test,
			// seed 49): the policy goes only after a pass that releases
			// nothing, or that key would stay behind with no policy to
			// serve it.
			return finalizer.Pending(time.Second, fmt.Sprintf("released its finalizer from %d object(s) not being deleted; looking once more for any it attached meanwhile", released))
		}
	}
	remaining, err := r.countOwned(ctx, s, terminating)
	if err != nil {
		return finalizer.Retry(err)
	}
	if remaining > 0 {
		why := fmt.Sprintf("waiting for %d teardown(s) in progress to finish (onPolicyDeletion: %s)", remaining, s.OnPolicyDeletion)
		if terminating {
			why = fmt.Sprintf("namespace %s is being deleted: waiting for %d guarded object(s) to finish their cleanup", obj.GetNamespace(), remaining)
		}
		return finalizer.Pending(2*time.Second, why)
	}
	return finalizer.Done()
}

// unserved ends a deleted policy that is not in force. One never served
// guards nothing. One served before (its status records a key) but that
// cannot be served now (its spec no longer parses) cannot run its steps:
// it waits, with a message saying so, while any object carries one of its
// keys (of a key another policy owns now, while any object whose records
// name it does: owes); nothing is released without its cleanup.
func (r *Reconciler) unserved(ctx context.Context, obj teardownv1alpha1.PolicyObject) finalizer.Result {
	status := obj.PolicyStatus()
	if status.Finalizer == "" {
		return finalizer.Done()
	}
	// A key another policy owns now is that policy's on every object but
	// those whose records say this one started or attached them: a
	// teardown finishes under who started it, and this policy may be
	// unserved only for a moment (a restart while the API server is away
	// fails its checks), so it waits for those (model seed 118).
	yielded := ""
	if mine, ok := policy.ClaimOf(obj); ok {
		owner, err := r.ownerOf(ctx, mine)
		if err != nil {
			return finalizer.Retry(err)
		}
		if owner.Ref != mine.Ref {
			yielded = mine.Key
		}
	}
	carried := map[retiredKey]bool{}
	for _, k := range status.Kinds {
		carried[retiredKey{key: status.Finalizer, gvk: schema.FromAPIVersionAndKind(k.APIVersion, k.Kind)}] = true
	}
	for _, k := range status.Retired {
		carried[retiredKey{key: k.Finalizer, gvk: schema.FromAPIVersionAndKind(k.APIVersion, k.Kind)}] = true
	}
	var opts []client.ListOption
	if ns := obj.GetNamespace(); ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	n := 0
	for rk := range carried {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(rk.gvk.GroupVersion().WithKind(rk.gvk.Kind + "List"))
		if err := r.direct.List(ctx, list, opts...); err != nil {
			if isNoMatch(err) {
				continue
			}
			return finalizer.Retry(fmt.Errorf("listing %s: %w", rk.gvk.Kind, err))
		}
		for i := range list.Items {
			if owes(&list.Items[i], rk.key, obj.GetUID(), rk.key != yielded, r.proofs()) {
				n++
			}
		}
	}
	if n == 0 {
		return finalizer.Done()
	}
	return finalizer.Pending(30*time.Second, fmt.Sprintf(
		"the policy cannot be served (see its Ready condition) and %d object(s) still carry its finalizer: fix its spec so their cleanup runs, or release them with kubectl teardown release", n))
}

// owes reports whether o, which an unserved policy with this UID may still
// owe a cleanup under key, holds that policy's deletion: it carries key,
// and key is the policy's own (mine), or its records (step record, else
// attached record, bound to o) name the policy.
func owes(o metav1.Object, key string, uid types.UID, mine bool, proofs guarded.Proofs) bool {
	if !slices.Contains(o.GetFinalizers(), key) {
		return false
	}
	return mine || guarded.ProvenBy(o, key, proofs) == uid
}

// releaseLive removes s's keys from the objects it owns them on that are
// not being deleted, except in namespaces being deleted (a
// ClusterTeardownPolicy's objects there are about to be deleted and are
// owed their cleanup).
func (r *Reconciler) releaseLive(ctx context.Context, s *policy.Served) (int, error) {
	released := 0
	terminating := r.terminatingNamespaces()
	for _, k := range s.Keys {
		// A yielded key (k.Finishing) is another policy's now, which leaves
		// the objects this one attached alone; owns is true only for those.
		for _, gvk := range k.Kinds {
			release := func(o *metav1.PartialObjectMetadata) bool {
				return o.DeletionTimestamp == nil && r.owns(ctx, s, k, gvk, o) && !terminating(ctx, o.Namespace)
			}
			report, err := finalizer.DrainIf(ctx, r.direct, gvk, k.Key, release, scope(s.Policy)...)
			released += len(report.Removed)
			if err != nil {
				if isNoMatch(err) {
					continue // the kind is gone, and its objects with it
				}
				return released, fmt.Errorf("releasing %s objects: %w", gvk.Kind, err)
			}
		}
	}
	return released, nil
}

// countOwned counts the objects in scope on which s still owns a key: those
// being deleted, and those in a namespace being deleted (all of them when
// all is set: the policy's own namespace is).
func (r *Reconciler) countOwned(ctx context.Context, s *policy.Served, all bool) (int, error) {
	n := 0
	terminating := r.terminatingNamespaces()
	for _, k := range s.Keys {
		for _, gvk := range k.Kinds {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := r.direct.List(ctx, list, scope(s.Policy)...); err != nil {
				if isNoMatch(err) {
					continue
				}
				return 0, fmt.Errorf("listing %s: %w", gvk.Kind, err)
			}
			for i := range list.Items {
				o := &list.Items[i]
				if (all || o.DeletionTimestamp != nil || terminating(ctx, o.Namespace)) && r.owns(ctx, s, k, gvk, o) {
					n++
				}
			}
		}
	}
	return n, nil
}

// terminatingNamespaces returns a memo of guarded.NamespaceTerminating, read
// from the API server, for one pass. A namespace that cannot be read counts
// as terminating: nothing in it is released on a guess.
func (r *Reconciler) terminatingNamespaces() func(context.Context, string) bool {
	seen := map[string]bool{}
	return func(ctx context.Context, ns string) bool {
		if ns == "" {
			return false
		}
		t, ok := seen[ns]
		if !ok {
			var err error
			if t, err = guarded.NamespaceTerminating(ctx, r.reader, ns); err != nil {
				t = true
			}
			seen[ns] = t
		}
		return t
	}
}

// owns is guarded.Owns with the namespace labels read when needed. A
// namespace that cannot be read counts as not selected: only what Teardown
// attached or started is then owned.
func (r *Reconciler) owns(ctx context.Context, s *policy.Served, k policy.ServedKey, gvk schema.GroupVersionKind, o *metav1.PartialObjectMetadata) bool {
	nsLabels, _ := r.nsLabelsFor(ctx, s.Policy, o)
	return guarded.Owns(s, k, gvk, o, nsLabels, guarded.ProvenBy(o, k.Key, r.proofs()))
}

func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }
