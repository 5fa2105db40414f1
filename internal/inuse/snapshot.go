/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Snapshot answers who uses what from pods, bindings and ClusterRoles listed
// once, as kubectl teardown plan does: the same records (PodOf, BindingOf,
// ClusterRoleOf) and the
// same lookup as the controller's Index, so that the two cannot disagree on
// what counts as a use. It watches nothing and wakes nobody.
type Snapshot struct {
	stores
}

// NewSnapshot indexes pods and bindings (RoleBindings and
// ClusterRoleBindings alike: a Binding with no namespace is a
// ClusterRoleBinding), and the ClusterRoles that tell which aggregate which
// (needed only to answer for a ClusterRole).
func NewSnapshot(pods []*Pod, bindings []*Binding, clusterRoles []*ClusterRole) (*Snapshot, error) {
	s := &Snapshot{stores: newStores()}
	for _, r := range clusterRoles {
		if err := s.clusterRoles.Add(r); err != nil {
			return nil, fmt.Errorf("indexing ClusterRole %s: %w", r.Name, err)
		}
	}
	for _, p := range pods {
		if err := s.pods.Add(p); err != nil {
			return nil, fmt.Errorf("indexing pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	for _, b := range bindings {
		store := s.roleBindings
		if b.Namespace == "" {
			store = s.clusterRoleBindings
		}
		if err := store.Add(b); err != nil {
			return nil, fmt.Errorf("indexing %s %s: %w", b.Kind(), objectName(b.Namespace, b.Name), err)
		}
	}
	return s, nil
}

// Users answers who uses the object ns/name of kind gk among the pods of
// namespace scope (every pod when scope is empty), as Index.Check does.
func (s *Snapshot) Users(gk schema.GroupKind, ns, name, scope string) (*Use, error) {
	return s.users(gk, ns, name, scope, func(...string) {})
}

// PodNamespaces says whose pods decide whether the object ns/name of kind gk
// is used, within namespace scope: the namespaces to read pods from, or all
// when a binding names every ServiceAccount. For a role or a binding it
// reads the bindings the snapshot holds, so a caller lists bindings first,
// then only the pods it needs.
func (s *Snapshot) PodNamespaces(gk schema.GroupKind, ns, name, scope string) (namespaces []string, all bool, err error) {
	keys, _, err := s.podKeysOf(gk, ns, name, scope, func(...string) {})
	if err != nil {
		return nil, false, err
	}
	for _, k := range keys {
		var podNamespace string
		switch {
		case k == allPods:
			return nil, true, nil
		case strings.HasPrefix(k, podsInPrefix):
			podNamespace = strings.TrimPrefix(k, podsInPrefix)
		case strings.HasPrefix(k, serviceAccountPrefix):
			podNamespace, _, _ = strings.Cut(strings.TrimPrefix(k, serviceAccountPrefix), "/")
		default: // a Secret's or a ConfigMap's: its own namespace's pods
			podNamespace = ns
		}
		if podNamespace != "" && !slices.Contains(namespaces, podNamespace) {
			namespaces = append(namespaces, podNamespace)
		}
	}
	slices.Sort(namespaces)
	return namespaces, false, nil
}
