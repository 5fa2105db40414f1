/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// An operator that ran in the namespace being deleted (A8, issue 11
// family 4): the namespace controller deletes it with the rest, and the
// objects it must finalize stay. Reinstalling it there is impossible, as a
// Terminating namespace refuses new objects ("unable to create new content
// in namespace ... because it is being terminated"); it can run from
// another namespace, with the rights on the stuck one granted cluster-wide,
// since no RoleBinding can be created there either.

// operatorHome finds the Terminating namespace the owner ran in: its
// workload's, or, once its workload is gone, the namespace of the
// ServiceAccount a ClusterRoleBinding or RoleBinding named after it still
// grants (bindings outlive the namespace of their subjects). It returns ""
// when the owner did not run in a namespace being deleted.
func (e *Explainer) operatorHome(ctx context.Context, owner *Owner, entry Entry) (ns, evidence string) {
	if owner.Workload != nil {
		if e.c.NamespaceTerminating(ctx, owner.Workload.Namespace) {
			return owner.Workload.Namespace, fmt.Sprintf("%s runs there", owner.Workload)
		}
		return "", ""
	}
	var names []string
	if owner.Manager != "" && !isGenericManager(owner.Manager) {
		names = append(names, owner.Manager)
	}
	names = append(names, entry.Workloads...)
	if len(names) == 0 {
		return "", ""
	}
	bindings, err := bindings(ctx, e.c)
	if err != nil {
		return "", ""
	}
	for _, b := range bindings {
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Namespace == "" || !e.c.NamespaceTerminating(ctx, s.Namespace) {
				continue
			}
			for _, n := range names {
				if len(n) >= 4 && (strings.Contains(s.Name, n) || strings.Contains(b.Name, n)) {
					return s.Namespace, fmt.Sprintf("its workload is gone, but %s still grants ServiceAccount %s/%s, of namespace %s", b.Ref, s.Namespace, s.Name, s.Namespace)
				}
			}
		}
	}
	return "", ""
}

// operatorInNamespace is A8: the owner ran in namespace ns, which is being
// deleted.
func (e *Explainer) operatorInNamespace(fd *Finding, owner *Owner, ns, evidence string) {
	fd.Cause, fd.Catalog = CauseOwnerInTerminatingNamespace, "A8"
	owner.Evidence = append(owner.Evidence, evidence)
	if owner.Manager != "" && !isGenericManager(owner.Manager) {
		// The writer of the finalizer, and where it ran (its workload, or
		// the binding still granting its ServiceAccount), agree.
		owner.Confidence = ConfidenceCertain
	}
	fd.Message = fmt.Sprintf("%s owns %q and ran in namespace %s, which is being deleted (%s): it is gone before it could clean up, and cannot be reinstalled there, as a Terminating namespace refuses new objects",
		owner.Component, fd.Finalizer, ns, evidence)
	fd.FixOwner = "operator vendor (design); cluster admin"
	obj := ""
	if fd.Object != nil {
		obj = fd.Object.Resource
		if obj == "" {
			obj = strings.ToLower(fd.Object.Kind)
		}
	}
	fd.Remedy = fmt.Sprintf("run %s from another namespace: install it there (same version and configuration) and grant its ServiceAccount get, list, watch, patch and update on %s in namespace %s through a ClusterRoleBinding (no RoleBinding can be created in a Terminating namespace); it then finalizes what is left and the namespace goes. If it cannot run elsewhere, do its cleanup by hand, then release each finalizer: kubectl teardown release %s --finalizer %s --reason '...'",
		owner.Component, orUnknown(obj), ns, targetOrPlaceholder(fd.Object), fd.Finalizer)
	if fd.Leaks == "" {
		fd.Leaks = "whatever " + owner.Component + " cleans up outside this object (unknown to Teardown)"
	}
	fd.Leaks = "releasing without its cleanup leaks " + fd.Leaks
}

func targetOrPlaceholder(ref *ObjectRef) string {
	if ref == nil {
		return "TYPE/NAME"
	}
	return TargetArg(*ref)
}

// namedBinding is a ClusterRoleBinding or RoleBinding's subjects.
type namedBinding struct {
	Ref      string
	Name     string
	Subjects []rbacv1.Subject
}

// bindings is every ClusterRoleBinding and RoleBinding, read once per run;
// a failed RoleBinding list leaves the ClusterRoleBindings, which tell
// alone.
func bindings(ctx context.Context, c *kube.Cluster) ([]namedBinding, error) {
	crbs, err := c.ClusterRoleBindings(ctx)
	if err != nil {
		return nil, err
	}
	var out []namedBinding
	for _, b := range crbs {
		out = append(out, namedBinding{Ref: "ClusterRoleBinding " + b.Name, Name: b.Name, Subjects: b.Subjects})
	}
	rbs, err := c.RoleBindings(ctx)
	if err != nil {
		return out, nil
	}
	for _, b := range rbs {
		out = append(out, namedBinding{Ref: fmt.Sprintf("RoleBinding %s/%s", b.Namespace, b.Name), Name: b.Name, Subjects: b.Subjects})
	}
	return out, nil
}
