/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Causes of this family (see report.go).
const (
	CauseOwnerLacksRBAC = "OwnerLacksRBAC" // B4
)

// ownerRBAC: B4. Once the owner's workload is found, a SubjectAccessReview
// asks whether its ServiceAccount may patch or update the object at all. A
// running owner without that right is the root blocker; a stopped one would
// still be stuck once restarted, which is worth a warning. Nothing is
// reported when the check cannot be made (no right to create
// SubjectAccessReviews: a read-only user).
func (e *Explainer) ownerRBAC(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object) {
	o := fd.Owner
	if o == nil || o.ServiceAccount == "" || fd.Cause == CauseOrphanFinalizer {
		return
	}
	saNS, saName, _ := strings.Cut(o.ServiceAccount, "/")
	allowed, denied, ok := e.serviceAccountMay(ctx, saNS, saName, gvr, obj.GetNamespace(), obj.GetName(), "patch", "update")
	if !ok {
		return
	}
	if allowed {
		o.Evidence = append(o.Evidence, fmt.Sprintf("SubjectAccessReview: ServiceAccount %s may patch %s", o.ServiceAccount, resourceName(gvr)))
		return
	}
	grant := rbacGrant(saNS, saName, gvr, obj.GetNamespace())
	msg := fmt.Sprintf("its ServiceAccount %s may not patch or update %s %s (SubjectAccessReview: %s)",
		o.ServiceAccount, resourceName(gvr), joinNS(obj.GetNamespace(), obj.GetName()), denied)
	o.Evidence = append(o.Evidence, fmt.Sprintf("SubjectAccessReview: ServiceAccount %s may not patch or update %s %s",
		o.ServiceAccount, resourceName(gvr), joinNS(obj.GetNamespace(), obj.GetName())))
	leaks := fd.Leaks
	if leaks == "" {
		leaks = "whatever " + o.Component + " cleans up outside this object (unknown to Teardown)"
	}
	if o.State == OwnerAlive && !ownCauseFound(fd) {
		fd.Cause, fd.Catalog, fd.Severity = CauseOwnerLacksRBAC, "B4", SeverityBlocker
		fd.Message = fmt.Sprintf("%s owns %q and is running, but cannot remove it: %s", o.Component, fd.Finalizer, msg)
		fd.FixOwner = "operator packaging (its RBAC); cluster admin"
		fd.Remedy = fmt.Sprintf("grant the owner the right to write the object, then it removes the finalizer itself: %s; or fix the RBAC its chart or bundle ships", grant)
		fd.Leaks = leaks
		return
	}
	if o.State == OwnerAlive {
		// The finalizer's own check found a cause too (a drain blocked by
		// a budget, a volume that cannot detach): both must be fixed, and
		// both are root blockers.
		fd.Children = append(fd.Children, Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityBlocker, Object: fd.Object, Finalizer: fd.Finalizer, Owner: o,
			Message:  fmt.Sprintf("%s is running, but even once the rest is fixed it cannot remove %q: %s", o.Component, fd.Finalizer, msg),
			FixOwner: "operator packaging (its RBAC); cluster admin",
			Remedy:   fmt.Sprintf("grant the owner the right to write the object: %s; or fix the RBAC its chart or bundle ships", grant),
			Leaks:    leaks})
		return
	}
	fd.Children = append(fd.Children, Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityWarning, Object: fd.Object, Finalizer: fd.Finalizer,
		Message:  "even once running again it could not remove the finalizer: " + msg,
		FixOwner: "operator packaging (its RBAC); cluster admin",
		Remedy:   grant,
		Leaks:    leaks})
}

// ownCauseFound says whether a finalizer's own check named a cause of its
// own (not only the owner's liveness): then a missing permission is
// reported beside it.
func ownCauseFound(fd *Finding) bool {
	switch fd.Cause {
	case "", CauseCleanupInProgress, CauseOwnerUnknown, CauseOwnerGone, CauseOrphanFinalizer, CauseOwnerInTerminatingNamespace:
		return false
	}
	return true
}

// serviceAccountMay asks, with one SubjectAccessReview per verb, whether a
// ServiceAccount may do any of verbs on the object. ok is false when the
// question could not be asked.
func (e *Explainer) serviceAccountMay(ctx context.Context, saNS, saName string, gvr schema.GroupVersionResource, ns, name string, verbs ...string) (allowed bool, denied string, ok bool) {
	var reasons []string
	user := "system:serviceaccount:" + saNS + ":" + saName
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"}
	for _, verb := range verbs {
		// First on every object of the kind in ns, once per run: RBAC only
		// adds, so a grant there answers for this object too, and status
		// asks once for all the objects an owner holds.
		attrs := authorizationv1.ResourceAttributes{Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Namespace: ns}
		got, err := e.c.AccessReview(ctx, user, groups, attrs)
		if err != nil {
			return false, "", false
		}
		if !got.Allowed && e.c.MayAskByName(user, attrs) {
			// A grant naming this object (resourceNames).
			attrs.Name = name
			if got, err = e.c.AccessReview(ctx, user, groups, attrs); err != nil {
				return false, "", false
			}
		}
		if got.Allowed {
			return true, "", true
		}
		r := verb + " denied"
		if got.Reason != "" {
			r += ": " + got.Reason
		}
		if got.EvaluationError != "" {
			r += " (" + got.EvaluationError + ")"
		}
		reasons = append(reasons, r)
	}
	return false, strings.Join(reasons, "; "), true
}

// resourceName is resource.group, as RBAC rules and kubectl name it.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

// rbacGrant is the kubectl command granting patch and update on a resource
// to a ServiceAccount: a Role in ns, or a ClusterRole for cluster-scoped
// objects.
func rbacGrant(saNS, saName string, gvr schema.GroupVersionResource, ns string) string {
	if saName == "default" {
		// Granting the namespace's default ServiceAccount grants every pod
		// that does not name one.
		return fmt.Sprintf("give the owner a ServiceAccount of its own (it runs as %s/default, shared by every pod there that names none), then grant that one patch and update on %s", saNS, resourceName(gvr))
	}
	name := saName + "-finalizers"
	if ns == "" {
		return fmt.Sprintf("kubectl create clusterrole %s --verb=patch,update --resource=%s && kubectl create clusterrolebinding %s --clusterrole=%s --serviceaccount=%s:%s",
			name, resourceName(gvr), name, name, saNS, saName)
	}
	return fmt.Sprintf("kubectl create role %s -n %s --verb=patch,update --resource=%s && kubectl create rolebinding %s -n %s --role=%s --serviceaccount=%s:%s",
		name, ns, resourceName(gvr), name, ns, name, saNS, saName)
}
