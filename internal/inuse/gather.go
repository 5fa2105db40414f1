/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Lists is how a caller reads the cluster for Gather, as its own identity
// and a page at a time: the controller through its client, kubectl
// teardown plan through client-go's pager. Each calls each for every item;
// a namespace of "" means every namespace.
type Lists interface {
	RoleBindings(ctx context.Context, namespace string, each func(*rbacv1.RoleBinding)) error
	ClusterRoleBindings(ctx context.Context, each func(*rbacv1.ClusterRoleBinding)) error
	ClusterRoles(ctx context.Context, each func(*rbacv1.ClusterRole)) error
	Pods(ctx context.Context, namespace string, each func(*corev1.Pod)) error
}

// Query is an object whose users Gather must be able to answer for: the
// object namespace/name of kind GK, among the pods of namespace Scope
// (every pod when empty).
type Query struct {
	GK              schema.GroupKind
	Namespace, Name string
	Scope           string
}

// Gather lists what queries need, once for all of them, and returns a
// Snapshot that answers each: for RBAC kinds the bindings they are granted
// through first (and for a ClusterRole the ClusterRoles, which say what
// aggregates it), then the pods of only the namespaces whose pods may use
// one of the objects (its own for a ServiceAccount, Secret or ConfigMap;
// those the bindings' subjects name for RBAC; every namespace only when a
// binding names every ServiceAccount).
func Gather(ctx context.Context, l Lists, queries []Query) (*Snapshot, error) {
	var bindingNamespaces []string
	clusterBindings, clusterRoles := false, false
	for _, q := range queries {
		switch q.GK {
		case roleKind, roleBindingKind:
			bindingNamespaces = append(bindingNamespaces, q.Namespace)
		case clusterRoleKind:
			// RoleBindings of the scope (any namespace for a cluster
			// policy) may grant it.
			bindingNamespaces = append(bindingNamespaces, q.Scope)
			clusterBindings = clusterBindings || q.Scope == ""
			clusterRoles = true
		case clusterRoleBindingKind:
			clusterBindings = clusterBindings || q.Scope == ""
		}
	}
	var bindings []*Binding
	for _, ns := range namespacesToList(bindingNamespaces) {
		if err := l.RoleBindings(ctx, ns, func(rb *rbacv1.RoleBinding) { bindings = append(bindings, BindingOf(rb)) }); err != nil {
			return nil, fmt.Errorf("listing RoleBindings%s: %w", inNamespace(ns), err)
		}
	}
	if clusterBindings {
		if err := l.ClusterRoleBindings(ctx, func(crb *rbacv1.ClusterRoleBinding) { bindings = append(bindings, ClusterBindingOf(crb)) }); err != nil {
			return nil, fmt.Errorf("listing ClusterRoleBindings: %w", err)
		}
	}
	var roles []*ClusterRole
	if clusterRoles {
		if err := l.ClusterRoles(ctx, func(cr *rbacv1.ClusterRole) { roles = append(roles, ClusterRoleOf(cr)) }); err != nil {
			return nil, fmt.Errorf("listing ClusterRoles: %w", err)
		}
	}
	grants, err := NewSnapshot(nil, bindings, roles)
	if err != nil {
		return nil, err
	}
	var podNamespaces []string
	for _, q := range queries {
		namespaces, all, err := grants.PodNamespaces(q.GK, q.Namespace, q.Name, q.Scope)
		if err != nil {
			return nil, err
		}
		if all {
			namespaces = []string{q.Scope} // "" lists every namespace
		}
		podNamespaces = append(podNamespaces, namespaces...)
	}
	var pods []*Pod
	for _, ns := range namespacesToList(podNamespaces) {
		if err := l.Pods(ctx, ns, func(p *corev1.Pod) { pods = append(pods, PodOf(p)) }); err != nil {
			return nil, fmt.Errorf("listing pods%s: %w", inNamespace(ns), err)
		}
	}
	return NewSnapshot(pods, bindings, roles)
}

// namespacesToList reduces namespaces to the lists to make: just "" (every
// namespace) when one of them is "", else each once.
func namespacesToList(namespaces []string) []string {
	if slices.Contains(namespaces, "") {
		return []string{""}
	}
	slices.Sort(namespaces)
	return slices.Compact(namespaces)
}

func inNamespace(ns string) string {
	if ns == "" {
		return " in every namespace"
	}
	return " in namespace " + ns
}
