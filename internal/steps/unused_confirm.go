/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// deletionTimestampPrecision is how much later than its deletionTimestamp
// an object may really have been deleted: the API server records the
// timestamp truncated to the second.
const deletionTimestampPrecision = time.Second

// unusedGraceLeft is how long the confirming list must still wait: it
// starts no sooner than UnusedGrace after the object was deleted, and no
// sooner than UnusedGrace after covered, when this process knew the in-use
// webhook's configuration asking about the pods of the object's namespace
// stored (admit.Coverage; the zero time when no coverage applies). So it
// sees every pod the webhook admitted, and every pod the API server did not
// ask it about.
//
// Why that is enough. The webhook reads the object from the API server
// when a pod that uses it is created (or gains it through an ephemeral
// container), and refuses the pod when the object is being deleted and
// still carries the key of a policy with an unused step. So a pod it
// admits was checked by a read that did not see the deletion: the read
// came before the deletion was stored (at C, at most the deletion's own
// write latency after its deletionTimestamp D). Such a pod is stored at P,
// within the API server's admission-to-storage latency L after that read
// (the end of our webhook's call, the other validating webhooks it waits
// for, the storage write): P < C + L. The list that follows this wait
// starts after D + UnusedGrace, and a pod stored before a list starts is
// in it. So with UnusedGrace > (C - D) + L, every admitted pod is either in
// the list, or was stored after it only because it was admitted after the
// read saw the deletion, which the webhook does not do. No record of the
// webhook's "alive" answers is needed: each one came before C.
//
// A pod the webhook was not asked about: the API server matched it against
// a configuration that did not name the namespace yet, at A, before it saw
// the one stored at covered, within its own watch latency X: A < covered +
// X. It is stored by A + L, so before covered + UnusedGrace when X + L is
// below the grace; the list starts after that. The configuration keeps the
// namespace until the object is gone (admit.Coverage), so every pod matched
// after covered + X is asked about.
//
// D is recorded to the second, so the wait counts from D plus that second.
// It never exceeds UnusedGrace: the object was deleted, and covered seen,
// before this attempt (this also bounds the effect of a controller clock
// behind the API server's; one ahead of it by s shortens the grace by s).
//
// The step answers pending for the rest of the grace rather than sleeping:
// a mass deletion must not hold every worker for the grace. There is no
// wait without the webhook (UnusedGrace 0), where it would close nothing.
func (r *Runner) unusedGraceLeft(obj metav1.Object, covered time.Time) time.Duration {
	deleted := obj.GetDeletionTimestamp()
	if r.UnusedGrace <= 0 || deleted == nil {
		return 0
	}
	from := deleted.Add(deletionTimestampPrecision)
	if covered.After(from) {
		from = covered
	}
	return max(0, min(r.UnusedGrace, from.Add(r.UnusedGrace).Sub(r.now())))
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
