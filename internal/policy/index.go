/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// Served is a policy version in force and everything the controllers run
// for it. It is built whole by the policy controller and never changed
// afterwards: a new version, a new retired key or the policy's deletion
// replaces it in the Index.
type Served struct {
	*Policy
	// Keys are the finalizer keys served: the version's own first, then
	// the retired keys of earlier versions (status.retired), which are
	// served only so that teardowns already under way finish.
	Keys []ServedKey
	// Released counts the finalizers removed without cleanup since the
	// controller started; every version of one policy shares it.
	Released *atomic.Int64
	// Refused holds the objects the policy selects on which the API server
	// refused the attach patch or a progress record; every version of one
	// policy shares it.
	Refused *Refused
	// BoundRecordsSince is status.boundRecordsSince: a step record of an
	// earlier release (not bound to its object) names this policy only on
	// an object created before it (EarlierRelease).
	BoundRecordsSince time.Time
}

// EarlierRelease reports whether a step record not bound to obj, naming
// this policy, is the earlier release's: obj was created before a
// controller that binds its records first served the policy, or in that
// second (CreatedUpTo).
func (s *Served) EarlierRelease(obj metav1.Object) bool {
	return !s.BoundRecordsSince.IsZero() && CreatedUpTo(obj, s.BoundRecordsSince)
}

// CreatedUpTo reports whether obj was created before t or in t's second.
// Creation timestamps are whole seconds, so an object stamped with t's
// second may have been created before t: it counts as older. Read as
// younger, an earlier release's teardown started on an object created in
// the second of an upgrade would never be finished (its records proven by
// nothing, TestUpgradeMidTeardown); read as older, a record forged on an
// object created in that one second is trusted as an earlier release's,
// which the admission policy teardown-protect-records refuses to let
// anyone but the controller write (docs/security.md).
func CreatedUpTo(obj metav1.Object, t time.Time) bool {
	created := obj.GetCreationTimestamp().Time
	return !created.IsZero() && created.Before(t.Truncate(time.Second).Add(time.Second))
}

// ServedKey is one finalizer key of a served policy and the kinds it is
// served for.
type ServedKey struct {
	Key   string
	Kinds []schema.GroupVersionKind
	// Retired marks a key of an earlier version: never attached, released
	// from objects not being deleted, finished on objects being deleted.
	Retired bool
	// Finishing marks a key another policy owns now (the policy yielded
	// it): never attached, never released; only the teardowns this policy
	// started under it (their step record names this policy) are finished,
	// under its steps.
	Finishing bool
	// Fin runs the policy's steps under Key.
	Fin *finalizer.Finalizers
}

// Outranks orders two served policies that both serve a key for an object,
// as Claim.Outranks does for their claims: the policy controller serves
// only the owner, but while it has not yet seen a new rival both can be in
// force for a moment, and then only the higher acts.
func (s *Served) Outranks(o *Served) bool {
	return Claim{Ref: s.Ref, Created: s.Created}.Outranks(Claim{Ref: o.Ref, Created: o.Created})
}

// Yielded reports whether the policy serves only the teardowns it started:
// another policy owns its key.
func (s *Served) Yielded() bool {
	return len(s.Keys) > 0 && !slices.ContainsFunc(s.Keys, func(k ServedKey) bool { return !k.Finishing })
}

// Serves reports whether k is served for objects of kind gvk.
func (k ServedKey) Serves(gvk schema.GroupVersionKind) bool { return slices.Contains(k.Kinds, gvk) }

// InScope reports whether obj is where the policy may act: its own
// namespace for a TeardownPolicy, anywhere for a ClusterTeardownPolicy.
func (p *Policy) InScope(obj metav1.Object) bool {
	return p.Ref.Kind == KindCluster || obj.GetNamespace() == p.Ref.Namespace
}

// Kinds returns the policy's target kinds, each once, in spec order.
func (p *Policy) Kinds() []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	for _, t := range p.Targets {
		if !slices.Contains(kinds, t.GVK) {
			kinds = append(kinds, t.GVK)
		}
	}
	return kinds
}

// Index holds the served policies. The policy controller is its only
// writer; the target controller and the status code read it.
type Index struct {
	mu       sync.RWMutex
	policies map[Ref]*Served
	// byKind keeps ForKind's answers until a policy serving the kind is set
	// or deleted (keepKinds):
	// ForKind is asked for every guarded object reconciled, and building
	// the answer costs O(P log P) (2.9 ms with 1,000 policies).
	byKind map[schema.GroupVersionKind][]*Served
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{policies: map[Ref]*Served{}, byKind: map[schema.GroupVersionKind][]*Served{}}
}

// Set puts s in force in place of any earlier version of the same policy,
// carrying over its release counter and refused objects.
func (x *Index) Set(s *Served) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if prev, ok := x.policies[s.Ref]; ok && prev.UID == s.UID {
		if s.Released == nil {
			s.Released = prev.Released
		}
		if s.Refused == nil {
			s.Refused = prev.Refused
		}
	}
	if s.Released == nil {
		s.Released = new(atomic.Int64)
	}
	if s.Refused == nil {
		s.Refused = NewRefused()
	}
	prev := x.policies[s.Ref]
	x.policies[s.Ref] = s
	x.keepKinds(prev, s)
}

// Delete removes a policy.
func (x *Index) Delete(ref Ref) {
	x.mu.Lock()
	defer x.mu.Unlock()
	prev := x.policies[ref]
	delete(x.policies, ref)
	x.keepKinds(prev, nil)
}

// keepKinds keeps ForKind's answers true once prev (nil: none) was
// replaced by next (nil: deleted), without rebuilding those it does not
// change: every policy's periodic refresh puts it in force again with the
// same kinds, and clearing all answers each time would sort every policy
// again as often (with 1,000 policies, 67 refreshes a second). An answer
// served by both is copied with next in prev's place (callers may hold
// the old slice); one that gains or loses the policy is rebuilt when next
// asked.
func (x *Index) keepKinds(prev, next *Served) {
	for gvk, list := range x.byKind {
		had, has := prev.servesKind(gvk), next.servesKind(gvk)
		switch i := slices.Index(list, prev); {
		case !had && !has:
		case had && has && i >= 0:
			kept := slices.Clone(list)
			kept[i] = next
			x.byKind[gvk] = kept
		default:
			delete(x.byKind, gvk)
		}
	}
}

// servesKind reports whether s (nil: no policy) serves a key for gvk.
func (s *Served) servesKind(gvk schema.GroupVersionKind) bool {
	return s != nil && slices.ContainsFunc(s.Keys, func(k ServedKey) bool { return k.Serves(gvk) })
}

// Get returns a served policy by reference.
func (x *Index) Get(ref Ref) (*Served, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.policies[ref]
	return s, ok
}

// All returns every served policy.
func (x *Index) All() []*Served {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]*Served, 0, len(x.policies))
	for _, s := range x.policies {
		out = append(out, s)
	}
	return out
}

// ForKind returns the policies that serve a key for kind gvk, ordered by
// reference so that their cleanups are attempted in a stable order. The
// slice is shared by every caller until a policy serving gvk is set or
// deleted: do not change it.
func (x *Index) ForKind(gvk schema.GroupVersionKind) []*Served {
	x.mu.RLock()
	out, ok := x.byKind[gvk]
	x.mu.RUnlock()
	if ok {
		return out
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if out, ok := x.byKind[gvk]; ok {
		return out
	}
	type named struct {
		name string
		s    *Served
	}
	var found []named
	for _, s := range x.policies {
		if s.servesKind(gvk) {
			found = append(found, named{s.Ref.String(), s})
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].name < found[j].name })
	out = make([]*Served, len(found))
	for i, f := range found {
		out[i] = f.s
	}
	x.byKind[gvk] = out
	return out
}
