/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/internal/inuse"
)

// PlanUnused is what an unused step of a policy would hold the object for if
// it were deleted now: the pods that use it, found by the controller's own
// lookup (internal/inuse) over the pods and bindings plan lists.
type PlanUnused struct {
	// Finalizer and Step name the policy's finalizer and its unused step.
	Finalizer string `json:"finalizer"`
	Step      string `json:"step"`
	// Scope is the namespace whose pods count (a TeardownPolicy's); empty
	// for a ClusterTeardownPolicy, for which every pod counts.
	Scope string `json:"scope,omitempty"`
	// Pods are the pods that use the object now, sorted; none when no pod
	// does (the step would succeed at once).
	Pods []PlanPod `json:"pods,omitempty"`
	// Through names, for a Role or ClusterRole, the bindings that grant it
	// to those pods.
	Through []string `json:"through,omitempty"`
	// Message is what the controller's pending step would say, in its
	// words; empty when no pod uses the object.
	Message string `json:"message,omitempty"`
	// Error says why the pods could not be read (the list was forbidden,
	// ...); Pods is then unknown, not empty.
	Error string `json:"error,omitempty"`
}

// PlanPod is a pod that holds an object.
type PlanPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Owner is the pod's controller ("DaemonSet node-agent"), if any.
	Owner string `json:"owner,omitempty"`
	// Terminating: the pod is being deleted; it holds until it is gone.
	Terminating bool `json:"terminating,omitempty"`
}

// unusedPolicy is what plan needs of a policy with unused steps.
type unusedPolicy struct {
	steps []string
	// scope is a TeardownPolicy's namespace; empty for a cluster policy.
	scope string
}

// unusedPolicies maps the finalizer of each policy with an unused step to
// those steps and the pods they see.
func unusedPolicies(policies []diagnose.Policy) map[string]unusedPolicy {
	out := map[string]unusedPolicy{}
	for _, p := range policies {
		if len(p.UnusedSteps) == 0 {
			continue
		}
		up := unusedPolicy{steps: p.UnusedSteps}
		if p.Ref.Namespace != "" {
			up.scope = p.Ref.Namespace
		}
		out[p.Finalizer] = up
	}
	return out
}

// unusedQuery is one object an unused step would hold.
type unusedQuery struct {
	node *PlanNode
	gk   schema.GroupKind
	up   unusedPolicy
	fin  string
}

// addUnused fills in, for each object of rep an unused step would hold, the
// pods that hold it now. The pods (and, for RBAC kinds, the bindings) are
// listed once for the whole plan, in pages.
func addUnused(ctx context.Context, c *kube.Cluster, rep *PlanReport, policies map[string]unusedPolicy) {
	if len(policies) == 0 {
		return
	}
	var queries []unusedQuery
	var walk func(n *PlanNode)
	walk = func(n *PlanNode) {
		for _, f := range n.Finalizers {
			up, ok := policies[f]
			gv, err := schema.ParseGroupVersion(n.Object.APIVersion)
			if !ok || err != nil {
				continue
			}
			if gk := gv.WithKind(n.Object.Kind).GroupKind(); inuse.Supported(gk) {
				queries = append(queries, unusedQuery{node: n, gk: gk, up: up, fin: f})
			}
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	walk(&rep.Root)
	if len(queries) == 0 {
		return
	}
	snap, err := listUses(ctx, c, queries)
	for _, q := range queries {
		for _, step := range q.up.steps {
			u := PlanUnused{Finalizer: q.fin, Step: step, Scope: q.up.scope}
			fillErr := err
			if fillErr == nil {
				fillErr = u.fill(snap, q.gk, q.node.Object)
			}
			if fillErr != nil {
				u.Error = fillErr.Error()
			}
			q.node.Unused = append(q.node.Unused, u)
		}
	}
}

// fill sets who uses obj, in the scope of u's policy.
func (u *PlanUnused) fill(snap *inuse.Snapshot, gk schema.GroupKind, obj diagnose.ObjectRef) error {
	use, err := snap.Users(gk, obj.Namespace, obj.Name, u.Scope)
	if err != nil {
		return err
	}
	if len(use.Pods) == 0 {
		return nil
	}
	for _, p := range use.Pods {
		pp := PlanPod{Namespace: p.Namespace, Name: p.Name, Terminating: p.Deleting}
		if p.OwnerKind != "" {
			pp.Owner = p.OwnerKind + " " + p.OwnerName
		}
		u.Pods = append(u.Pods, pp)
	}
	u.Through = use.Through
	u.Message = inuse.Describe(gk.Kind, use)
	return nil
}

// listUses lists what queries need, once for the whole plan, with the
// controller's own inuse.Gather.
func listUses(ctx context.Context, c *kube.Cluster, queries []unusedQuery) (*inuse.Snapshot, error) {
	var qs []inuse.Query
	for _, q := range queries {
		qs = append(qs, inuse.Query{GK: q.gk, Namespace: q.node.Object.Namespace, Name: q.node.Object.Name, Scope: q.up.scope})
	}
	snap, err := inuse.Gather(ctx, clusterLists{c}, qs)
	if err != nil {
		return nil, fmt.Errorf("cannot tell which pods use it: %w", err)
	}
	return snap, nil
}

// clusterLists is inuse.Lists through the engine's read-only layer: each
// list read once for the plan, in pages.
type clusterLists struct{ c *kube.Cluster }

func (l clusterLists) RoleBindings(ctx context.Context, ns string, each func(*rbacv1.RoleBinding)) error {
	items, err := l.c.RoleBindingsIn(ctx, ns)
	for i := range items {
		each(&items[i])
	}
	return err
}

func (l clusterLists) ClusterRoleBindings(ctx context.Context, each func(*rbacv1.ClusterRoleBinding)) error {
	items, err := l.c.ClusterRoleBindings(ctx)
	for i := range items {
		each(&items[i])
	}
	return err
}

func (l clusterLists) ClusterRoles(ctx context.Context, each func(*rbacv1.ClusterRole)) error {
	items, err := l.c.ClusterRoles(ctx)
	for i := range items {
		each(&items[i])
	}
	return err
}

func (l clusterLists) Pods(ctx context.Context, ns string, each func(*corev1.Pod)) error {
	items, err := l.c.Pods(ctx, ns)
	for i := range items {
		each(&items[i])
	}
	return err
}

// summary is the plan's line for u: that the object is held while pods use
// it, and which would hold it now, in the controller's words.
func (u *PlanUnused) summary() string {
	const held = "held while a pod uses it"
	scope := ""
	if u.Scope != "" {
		scope = " (pods of namespace " + u.Scope + ")"
	}
	switch {
	case u.Error != "":
		return held + scope + "; " + u.Error
	case len(u.Pods) == 0:
		return held + scope + "; none does now"
	default:
		return held + scope + "; now " + u.Message
	}
}
