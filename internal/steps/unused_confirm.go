/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/inuse"
)

// confirmPageSize is how many pods or bindings one page of a confirming
// list holds.
const confirmPageSize = 500

// confirmUnused answers, from the API server rather than the index, who uses
// the object ns/name of kind gk among the pods of namespace scope (every
// namespace when empty): for a ClusterRole the ClusterRoles that aggregate
// it, the bindings a role or binding is granted through, then the pods of
// only the namespaces those name. It runs once per
// release, when the index says nobody uses the object; it lists as the
// controller, as the index watches (a TeardownPolicy's answer is narrowed to
// its namespace, as the index's is), and with the same lookup
// (inuse.Snapshot), so the two cannot disagree on what a use is.
func (r *Runner) confirmUnused(ctx context.Context, gk schema.GroupKind, ns, name, scope string) (*inuse.Use, error) {
	var bindings []*inuse.Binding
	var clusterRoles []*inuse.ClusterRole
	if gk.Kind == "ClusterRole" && gk.Group == rbacv1.GroupName {
		// Bindings to a ClusterRole that aggregates it grant its rules too.
		err := listPages(ctx, r.Reader, &rbacv1.ClusterRoleList{}, "", func(l *rbacv1.ClusterRoleList) {
			for i := range l.Items {
				clusterRoles = append(clusterRoles, inuse.ClusterRoleOf(&l.Items[i]))
			}
		})
		if err != nil {
			return nil, fmt.Errorf("listing ClusterRoles: %w", err)
		}
	}
	if gk.Group == rbacv1.GroupName {
		// A ClusterRole is granted by RoleBindings anywhere; a Role or a
		// RoleBinding concerns its own namespace's; a ClusterRoleBinding
		// none.
		roleBindingsIn := scope
		if scope == "" && (gk.Kind == "Role" || gk.Kind == "RoleBinding") {
			roleBindingsIn = ns
		}
		if gk.Kind != "ClusterRoleBinding" {
			err := listPages(ctx, r.Reader, &rbacv1.RoleBindingList{}, roleBindingsIn, func(l *rbacv1.RoleBindingList) {
				for i := range l.Items {
					bindings = append(bindings, inuse.BindingOf(&l.Items[i]))
				}
			})
			if err != nil {
				return nil, fmt.Errorf("listing RoleBindings: %w", err)
			}
		}
		if scope == "" && (gk.Kind == "ClusterRole" || gk.Kind == "ClusterRoleBinding") {
			err := listPages(ctx, r.Reader, &rbacv1.ClusterRoleBindingList{}, "", func(l *rbacv1.ClusterRoleBindingList) {
				for i := range l.Items {
					bindings = append(bindings, inuse.ClusterBindingOf(&l.Items[i]))
				}
			})
			if err != nil {
				return nil, fmt.Errorf("listing ClusterRoleBindings: %w", err)
			}
		}
	}
	grants, err := inuse.NewSnapshot(nil, bindings, clusterRoles)
	if err != nil {
		return nil, err
	}
	namespaces, all, err := grants.PodNamespaces(gk, ns, name, scope)
	if err != nil {
		return nil, err
	}
	if all {
		namespaces = []string{scope} // "" lists every namespace
	}
	var pods []*inuse.Pod
	for _, podNamespace := range namespaces {
		err := listPages(ctx, r.Reader, &corev1.PodList{}, podNamespace, func(l *corev1.PodList) {
			for i := range l.Items {
				pods = append(pods, inuse.PodOf(&l.Items[i]))
			}
		})
		if err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
	}
	snap, err := inuse.NewSnapshot(pods, bindings, clusterRoles)
	if err != nil {
		return nil, err
	}
	return snap.Users(gk, ns, name, scope)
}

// pageList is a list with a continue token.
type pageList interface {
	client.ObjectList
	*corev1.PodList | *rbacv1.RoleBindingList | *rbacv1.ClusterRoleBindingList | *rbacv1.ClusterRoleList
}

// listPages lists every object of list's kind in namespace ("" for all), a
// page at a time, handing each page to each. controller-runtime's reader
// has no pager of its own (client-go's works on runtime.Object lists from a
// typed clientset), hence the loop.
func listPages[L pageList](ctx context.Context, reader client.Reader, list L, namespace string, each func(L)) error {
	base := []client.ListOption{client.Limit(confirmPageSize)}
	if namespace != "" {
		base = append(base, client.InNamespace(namespace))
	}
	next := ""
	for {
		opts := append(slices.Clip(base), client.Continue(next))
		if err := reader.List(ctx, list, opts...); err != nil {
			return err
		}
		each(list)
		if next = list.GetContinue(); next == "" {
			return nil
		}
	}
}
