/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Use is who uses an object: the pods that count, and for a role the
// bindings that grant it to them.
type Use struct {
	// Pods are the pods that count, sorted by namespace and name.
	Pods []*Pod
	// Through names the bindings ("ClusterRoleBinding node-agent") that
	// grant a role to those pods; empty for other kinds.
	Through []string
	// GrantedIn is the namespace of each binding in Through ("" for a
	// ClusterRoleBinding), so that a description names only those its
	// reader may list (DescribeFor).
	GrantedIn map[string]string
}

// grant is a binding a role is granted through: how Through names it and
// its namespace.
type grant struct {
	text, namespace string
}

// Kinds the unused step holds, by what a pod uses them through.
var (
	serviceAccountKind     = schema.GroupKind{Kind: "ServiceAccount"}
	secretKind             = schema.GroupKind{Kind: "Secret"}
	configMapKind          = schema.GroupKind{Kind: "ConfigMap"}
	roleKind               = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}
	clusterRoleKind        = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}
	roleBindingKind        = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}
	clusterRoleBindingKind = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}
)

// Supported reports whether pods can use objects of kind gk.
func Supported(gk schema.GroupKind) bool {
	return slices.Contains([]schema.GroupKind{serviceAccountKind, secretKind, configMapKind, roleKind, clusterRoleKind,
		roleBindingKind, clusterRoleBindingKind}, gk)
}

// NamedByPods reports whether a pod names objects of kind gk itself (a
// Secret, ConfigMap or ServiceAccount of its namespace), so that admission
// sees the use when the pod is created: the kinds the in-use webhook
// checks. A pod uses RBAC objects only through its ServiceAccount.
func NamedByPods(gk schema.GroupKind) bool {
	return gk == serviceAccountKind || gk == secretKind || gk == configMapKind
}

// Check answers who uses the object ns/name of kind gk, among the pods of
// namespace scope (every pod when scope is empty). While it is in use, w
// stays registered under every reference the answer depends on, and is
// woken when one of them changes; once unused, w is forgotten. Before the
// index has synced, it answers ErrNotSynced and wakes w when it has.
//
// Registration comes before each read, so a change between the read and the
// registration cannot be missed: the informer updates its store before it
// tells the index, and the index looks for waiters only then.
func (x *Index) Check(w Waiter, gk schema.GroupKind, ns, name, scope string) (*Use, error) {
	x.hold(w, syncedKey)
	if !x.synced.Load() {
		return nil, ErrNotSynced
	}
	x.Forget(w)
	use, err := x.users(gk, ns, name, scope, func(keys ...string) { x.hold(w, keys...) })
	if err != nil || len(use.Pods) == 0 {
		x.Forget(w)
	}
	return use, err
}

// stores are the records a lookup reads: the informers' stores (Index) or
// those of pods, bindings and ClusterRoles listed once (Snapshot), with the
// same indexers.
type stores struct {
	pods, roleBindings, clusterRoleBindings, clusterRoles cache.Indexer
}

func newStores() stores {
	return stores{
		pods:                cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, podIndexers),
		roleBindings:        cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, bindingIndexers),
		clusterRoleBindings: cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, bindingIndexers),
		clusterRoles:        cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{}),
	}
}

// users answers who uses the object ns/name of kind gk among the pods of
// namespace scope (every pod when empty). It calls hold with each wait key
// the answer depends on before it reads what that key covers.
func (s *stores) users(gk schema.GroupKind, ns, name, scope string, hold func(keys ...string)) (*Use, error) {
	keys, through, err := s.podKeysOf(gk, ns, name, scope, hold)
	if err != nil {
		return nil, err
	}
	hold(keys...)
	return s.lookup(keys, scope, through)
}

// podKeysOf returns the pod keys whose pods use the object ns/name of kind
// gk, within namespace scope, and, for a role, which bindings each key came
// from. hold is told the keys of the bindings the answer rests on.
func (s *stores) podKeysOf(gk schema.GroupKind, ns, name, scope string, hold func(keys ...string)) ([]string, map[string][]grant, error) {
	// keys are the pod keys to look up; through, for a role, which
	// bindings each came from.
	var keys []string
	through := map[string][]grant{}
	switch gk {
	case serviceAccountKind:
		keys = []string{serviceAccountKey(ns, name)}
	case secretKind:
		keys = []string{secretKey(ns, name)}
	case configMapKind:
		keys = []string{configMapKey(ns, name)}
	case roleBindingKind, clusterRoleBindingKind:
		store, storeKey := s.roleBindings, ns+"/"+name
		if gk == clusterRoleBindingKind {
			store, storeKey = s.clusterRoleBindings, name
		}
		hold(bindingKey(&Binding{Namespace: ns, Name: name}))
		obj, ok, err := store.GetByKey(storeKey)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s %s: %w", gk.Kind, storeKey, err)
		}
		if b, isBinding := obj.(*Binding); ok && isBinding {
			keys = b.Subjects
		}
	case roleKind, clusterRoleKind:
		// The role itself, and for a ClusterRole every ClusterRole that
		// aggregates it, each with the one it aggregates.
		roles := map[string]string{name: ""}
		stores := []cache.Indexer{s.roleBindings}
		if gk == clusterRoleKind {
			stores = append(stores, s.clusterRoleBindings)
			// Any ClusterRole's change may change what aggregates it.
			hold(clusterRolesKey)
			maps.Copy(roles, aggregators(s.clusterRoles.List(), name))
		}
		for _, roleName := range slices.Sorted(maps.Keys(roles)) {
			rk := roleKey(gk.Kind, ns, roleName)
			hold(rk)
			suffix := ""
			if aggregated := roles[roleName]; aggregated == name {
				suffix = " to ClusterRole " + roleName + ", which aggregates it"
			} else if aggregated != "" {
				suffix = " to ClusterRole " + roleName + ", which aggregates ClusterRole " + aggregated
			}
			for _, store := range stores {
				objs, err := store.ByIndex(roleIndex, rk)
				if err != nil {
					return nil, nil, fmt.Errorf("looking up the bindings of %s %s: %w", gk.Kind, roleName, err)
				}
				for _, obj := range objs {
					b, ok := obj.(*Binding)
					if !ok {
						continue
					}
					for _, k := range b.Subjects {
						if !slices.Contains(keys, k) {
							keys = append(keys, k)
						}
						through[k] = append(through[k], grant{text: b.Kind() + " " + objectName(b.Namespace, b.Name) + suffix, namespace: b.Namespace})
					}
				}
			}
		}
	default:
		return nil, nil, fmt.Errorf("pods do not use %s objects by reference", gk)
	}
	return inScope(keys, scope), through, nil
}

// inScope narrows pod keys to the pods of namespace scope ("" keeps all).
func inScope(keys []string, scope string) []string {
	if scope == "" {
		return keys
	}
	var out []string
	for _, k := range keys {
		switch {
		case k == allPods:
			k = podsInPrefix + scope
		case strings.HasPrefix(k, serviceAccountPrefix) && !strings.HasPrefix(k, serviceAccountKey(scope, "")),
			strings.HasPrefix(k, podsInPrefix) && k != podsInPrefix+scope:
			continue // names pods of another namespace only
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// lookup returns the counted pods under keys, in namespace scope when set.
func (s *stores) lookup(keys []string, scope string, through map[string][]grant) (*Use, error) {
	use := &Use{}
	seen := map[*Pod]bool{}
	for _, k := range keys {
		var objs []any
		if k == allPods {
			objs = s.pods.List()
		} else {
			var err error
			if objs, err = s.pods.ByIndex(usesIndex, k); err != nil {
				return nil, fmt.Errorf("looking up the pods of %s: %w", k, err)
			}
		}
		found := false
		for _, obj := range objs {
			p, ok := obj.(*Pod)
			if !ok || !p.Counts() || scope != "" && p.Namespace != scope {
				continue
			}
			found = true
			if !seen[p] {
				seen[p] = true
				use.Pods = append(use.Pods, p)
			}
		}
		if found {
			for _, b := range through[k] {
				if !slices.Contains(use.Through, b.text) {
					use.Through = append(use.Through, b.text)
				}
				if use.GrantedIn == nil {
					use.GrantedIn = map[string]string{}
				}
				use.GrantedIn[b.text] = b.namespace
			}
		}
	}
	slices.SortFunc(use.Pods, func(a, b *Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	slices.Sort(use.Through)
	return use, nil
}

func objectName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
