/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
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
// namespace when empty), with inuse.Gather: what aggregates a ClusterRole,
// the bindings a role or binding is granted through, then the pods of only
// the namespaces those name. It runs once per release, when the index says
// nobody uses the object; it lists as the controller, as the index watches
// (a TeardownPolicy's answer is narrowed to its namespace, as the index's
// is), and with the same lookup (inuse.Snapshot), so the two cannot
// disagree on what a use is.
func (r *Runner) confirmUnused(ctx context.Context, gk schema.GroupKind, ns, name, scope string) (*inuse.Use, error) {
	snap, err := inuse.Gather(ctx, readerLists{r.Reader}, []inuse.Query{{GK: gk, Namespace: ns, Name: name, Scope: scope}})
	if err != nil {
		return nil, err
	}
	return snap.Users(gk, ns, name, scope)
}

// readerLists is inuse.Lists through the controller's reader, in pages.
type readerLists struct{ reader client.Reader }

func (l readerLists) RoleBindings(ctx context.Context, ns string, each func(*rbacv1.RoleBinding)) error {
	return listPages(ctx, l.reader, &rbacv1.RoleBindingList{}, ns, func(list *rbacv1.RoleBindingList) {
		for i := range list.Items {
			each(&list.Items[i])
		}
	})
}

func (l readerLists) ClusterRoleBindings(ctx context.Context, each func(*rbacv1.ClusterRoleBinding)) error {
	return listPages(ctx, l.reader, &rbacv1.ClusterRoleBindingList{}, "", func(list *rbacv1.ClusterRoleBindingList) {
		for i := range list.Items {
			each(&list.Items[i])
		}
	})
}

func (l readerLists) ClusterRoles(ctx context.Context, each func(*rbacv1.ClusterRole)) error {
	return listPages(ctx, l.reader, &rbacv1.ClusterRoleList{}, "", func(list *rbacv1.ClusterRoleList) {
		for i := range list.Items {
			each(&list.Items[i])
		}
	})
}

func (l readerLists) Pods(ctx context.Context, ns string, each func(*corev1.Pod)) error {
	return listPages(ctx, l.reader, &corev1.PodList{}, ns, func(list *corev1.PodList) {
		for i := range list.Items {
			each(&list.Items[i])
		}
	})
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
