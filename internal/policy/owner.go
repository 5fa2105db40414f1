/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Claim is what a policy object claims: a finalizer key for some kinds in a
// scope. It is read from the object alone (no compilation), so that every
// policy in the cache can be compared on every reconcile.
type Claim struct {
	Ref     Ref
	Created time.Time
	Key     string
	Kinds   []schema.GroupVersionKind
}

// ClaimOf returns the claim of a policy object; false for anything else.
func ClaimOf(obj client.Object) (Claim, bool) {
	ref, spec, ok := refAndSpec(obj)
	if !ok {
		return Claim{}, false
	}
	c := Claim{Ref: ref, Created: obj.GetCreationTimestamp().Time, Key: spec.Finalizer}
	if c.Key == "" {
		c.Key = DefaultKey(ref)
	}
	for _, t := range spec.Targets {
		if gv, err := schema.ParseGroupVersion(t.APIVersion); err == nil {
			c.Kinds = append(c.Kinds, gv.WithKind(t.Kind))
		}
	}
	return c, true
}

// overlaps reports whether two claims could put the same key on the same
// objects.
func (c Claim) overlaps(o Claim) bool {
	if c.Key != o.Key {
		return false
	}
	if c.Ref.Namespace != "" && o.Ref.Namespace != "" && c.Ref.Namespace != o.Ref.Namespace {
		return false // two namespaced policies never select the same objects
	}
	return slices.ContainsFunc(c.Kinds, func(k schema.GroupVersionKind) bool { return slices.Contains(o.Kinds, k) })
}

// older orders claims by age, then by reference, so that every replica and
// every restart picks the same owner.
func (c Claim) older(o Claim) bool {
	if !c.Created.Equal(o.Created) {
		return c.Created.Before(o.Created)
	}
	return c.Ref.String() < o.Ref.String()
}

// Owner returns the owner of mine's key among all claims: the oldest claim
// that overlaps it (mine itself when none is older). Two policies sharing a
// key on the same objects would release each other's guard, so only the
// owner is served; the others report the conflict. The decision reads only
// what is in the API server, so it is the same after any restart.
func Owner(mine Claim, all []Claim) Claim {
	owner := mine
	for _, c := range all {
		if c.Ref != mine.Ref && c.overlaps(mine) && c.older(owner) {
			owner = c
		}
	}
	return owner
}
