/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// Claim is what a policy object claims: a finalizer key for some kinds in a
// scope. It is read from the object alone (no compilation), so that every
// policy in the cache can be compared on every reconcile.
//
// Who owns a key is decided by construction (docs/controller.md, "Who owns
// a key"), never by age alone:
//   - keys in the teardown.dev domain belong to their default owners only
//     (ReservedKey);
//   - a ClusterTeardownPolicy outranks every TeardownPolicy, and a
//     TeardownPolicy's claim reaches only its own namespace, so no tenant can
//     take, block or disturb a key a cluster policy or another namespace uses;
//   - a policy in force (its status records the key served, and it is Ready)
//     outranks one that is not, so ownership does not change hands when a
//     policy is created, and the keys an earlier version left on objects
//     (status.retired) stay claimed until no object carries them;
//   - only then the older, and last the name, so that every replica and
//     every restart decides alike.
type Claim struct {
	Ref     Ref
	Created time.Time
	Key     string
	Kinds   []schema.GroupVersionKind
	// Serving is set on what the policy's status records in force (its key
	// and kinds, its retired keys) while it is Ready.
	Serving bool
}

// ClaimOf returns the claim of a policy object's spec; false for anything
// else.
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
	c.Serving = InForce(StatusOf(obj), c.Key)
	return c, true
}

// ClaimsOf returns every claim of a policy object: its spec's, and while it
// is in force, what its status records as served (the key and kinds of the
// version in force, and the retired keys of earlier versions, which are
// claims until no object carries them).
func ClaimsOf(obj client.Object) []Claim {
	spec, ok := ClaimOf(obj)
	if !ok {
		return nil
	}
	out := []Claim{spec}
	status := StatusOf(obj)
	if !InForce(status, status.Finalizer) {
		return out
	}
	add := func(key string, k teardownv1alpha1.GroupVersionKind) {
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		if err != nil || key == "" {
			return
		}
		out = append(out, Claim{Ref: spec.Ref, Created: spec.Created, Key: key, Kinds: []schema.GroupVersionKind{gv.WithKind(k.Kind)}, Serving: true})
	}
	for _, k := range status.Kinds {
		add(status.Finalizer, k)
	}
	for _, rk := range status.Retired {
		add(rk.Finalizer, rk.GroupVersionKind)
	}
	return out
}

// InForce reports whether a policy's status says a version of it is in
// force with key: Ready, with key recorded as status.finalizer.
func InForce(status *teardownv1alpha1.TeardownPolicyStatus, key string) bool {
	if status == nil || key == "" || status.Finalizer != key {
		return false
	}
	ready := meta.FindStatusCondition(status.Conditions, teardownv1alpha1.ReadyCondition)
	return ready != nil && ready.Status == metav1.ConditionTrue
}

// StatusOf returns the status of either policy kind; nil for anything else.
func StatusOf(obj client.Object) *teardownv1alpha1.TeardownPolicyStatus {
	if p, ok := obj.(teardownv1alpha1.PolicyObject); ok {
		return p.PolicyStatus()
	}
	return nil
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

// Outranks orders two policies' claims on one key (see Claim).
func (c Claim) Outranks(o Claim) bool {
	if cc, oc := c.Ref.Kind == KindCluster, o.Ref.Kind == KindCluster; cc != oc {
		return cc
	}
	if c.Serving != o.Serving {
		return c.Serving
	}
	if !c.Created.Equal(o.Created) {
		return c.Created.Before(o.Created)
	}
	return c.Ref.String() < o.Ref.String()
}

// Owner returns the owner of mine's key among all claims: the claim that
// outranks every other claim overlapping mine (mine itself when none
// does). Two policies sharing a key on the same objects would release each
// other's guard, so only the owner is served; the others finish only the
// teardowns they started, and report the conflict. The decision reads only
// what is in the API server, so it is the same after any restart.
func Owner(mine Claim, all []Claim) Claim {
	owner := mine
	for _, c := range all {
		if c.Ref != mine.Ref && c.overlaps(mine) && c.Outranks(owner) {
			owner = c
		}
	}
	return owner
}

// ReservedKey refuses a key in Teardown's own domain (teardown.dev and its
// subdomains) that is not the policy's default key: a tenant must not be
// able to name a ClusterTeardownPolicy's key (teardown.dev/<name>), another
// namespace's (<namespace>.teardown.dev/<name>), or the policies' own
// finalizer.
func ReservedKey(ref Ref, key string) error {
	domain, _, _ := strings.Cut(key, "/")
	group := teardownv1alpha1.GroupVersion.Group
	if domain != group && !strings.HasSuffix(domain, "."+group) {
		return nil
	}
	if key == teardownv1alpha1.PolicyFinalizer {
		return fmt.Errorf("finalizer %s is the policies' own", key)
	}
	if key != DefaultKey(ref) {
		return fmt.Errorf("finalizer %s is in Teardown's own domain %s, where a policy may use only its default key %s (leave spec.finalizer empty) or a key of another domain", key, group, DefaultKey(ref))
	}
	return nil
}
