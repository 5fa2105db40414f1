/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ownerRBAC: B4. Once the owner's workload is found, a SubjectAccessReview
// asks whether its ServiceAccount may patch or update the object at all. A
// running owner without that right is the root blocker; a stopped one would
// still be stuck once restarted, which is worth a warning. Nothing is
// reported when the check cannot be made (no right to create
// SubjectAccessReviews: a read-only user).
func (e *explainer) ownerRBAC(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object) {
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
	msg := fmt.Sprintf("ServiceAccount %s, which %s runs as, may not patch or update %s %s (SubjectAccessReview: %s)",
		o.ServiceAccount, o.Component, resourceName(gvr), joinNS(obj.GetNamespace(), obj.GetName()), denied)
	o.Evidence = append(o.Evidence, "SubjectAccessReview: "+msg)
	leaks := fd.Leaks
	if leaks == "" {
		leaks = "whatever " + o.Component + " cleans up outside this object (unknown to Teardown)"
	}
	if o.State == OwnerAlive {
		fd.Cause, fd.Catalog, fd.Severity = CauseOwnerLacksRBAC, "B4", SeverityBlocker
		fd.Message = fmt.Sprintf("%s owns %q and is running, but cannot remove it: %s", o.Component, fd.Finalizer, msg)
		fd.FixOwner = "operator packaging (its RBAC); cluster admin"
		fd.Remedy = fmt.Sprintf("grant the owner the right to write the object, then it removes the finalizer itself: %s; or fix the RBAC its chart or bundle ships", grant)
		fd.Leaks = leaks
		return
	}
	fd.Children = append(fd.Children, Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityWarning, Object: fd.Object, Finalizer: fd.Finalizer,
		Message:  "even once running again it could not remove the finalizer: " + msg,
		FixOwner: "operator packaging (its RBAC); cluster admin",
		Remedy:   grant,
		Leaks:    leaks})
}

// serviceAccountMay asks, with one SubjectAccessReview per verb, whether a
// ServiceAccount may do any of verbs on the object. ok is false when the
// question could not be asked.
func (e *explainer) serviceAccountMay(ctx context.Context, saNS, saName string, gvr schema.GroupVersionResource, ns, name string, verbs ...string) (allowed bool, denied string, ok bool) {
	var reasons []string
	for _, verb := range verbs {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + saNS + ":" + saName,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gvr.Group, Version: gvr.Version,
				Resource: gvr.Resource, Namespace: ns, Name: name},
		}}
		got, err := e.c.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return false, "", false
		}
		if got.Status.Allowed {
			return true, "", true
		}
		r := verb + " denied"
		if got.Status.Reason != "" {
			r += ": " + got.Status.Reason
		}
		if got.Status.EvaluationError != "" {
			r += " (" + got.Status.EvaluationError + ")"
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
	name := saName + "-finalizers"
	if ns == "" {
		return fmt.Sprintf("kubectl create clusterrole %s --verb=patch,update --resource=%s && kubectl create clusterrolebinding %s --clusterrole=%s --serviceaccount=%s:%s",
			name, resourceName(gvr), name, name, saNS, saName)
	}
	return fmt.Sprintf("kubectl create role %s -n %s --verb=patch,update --resource=%s && kubectl create rolebinding %s -n %s --role=%s --serviceaccount=%s:%s",
		name, ns, resourceName(gvr), name, ns, name, saNS, saName)
}

// warningEvents returns the newest Warning events about obj, newest first,
// as "reason: message (component, ×count)".
func (e *explainer) warningEvents(ctx context.Context, obj metav1.Object, max int) []string {
	l, err := e.c.kube.CoreV1().Events(obj.GetNamespace()).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.uid=" + string(obj.GetUID()) + ",type=" + corev1.EventTypeWarning})
	if err != nil {
		return nil
	}
	evs := l.Items
	last := func(ev *corev1.Event) time.Time {
		switch {
		case !ev.LastTimestamp.IsZero():
			return ev.LastTimestamp.Time
		case ev.Series != nil:
			return ev.Series.LastObservedTime.Time
		case !ev.EventTime.IsZero():
			return ev.EventTime.Time
		}
		return ev.CreationTimestamp.Time
	}
	sort.SliceStable(evs, func(i, j int) bool { return last(&evs[i]).After(last(&evs[j])) })
	var out []string
	for i := range evs {
		if len(out) == max {
			break
		}
		ev := &evs[i]
		from := ev.Source.Component
		if from == "" {
			from = ev.ReportingController
		}
		s := fmt.Sprintf("%s: %s", ev.Reason, strings.TrimSpace(ev.Message))
		if from != "" {
			s += " (" + from
			if ev.Count > 1 {
				s += fmt.Sprintf(", ×%d", ev.Count)
			}
			s += ")"
		}
		out = append(out, s)
	}
	return out
}

// loadBalancerCleanup: C7. The cloud-controller-manager's service controller
// removes service.kubernetes.io/load-balancer-cleanup once it has deleted the
// Service's cloud load balancer. It runs as a workload (or a static pod)
// with a leader-election Lease on self-managed clusters, and out of sight on
// managed ones.
func (e *explainer) loadBalancerCleanup(ctx context.Context, fd *Finding, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC {
		return
	}
	svc, err := e.c.kube.CoreV1().Services(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return
	}
	var addrs []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			addrs = append(addrs, in.IP)
		}
		if in.Hostname != "" {
			addrs = append(addrs, in.Hostname)
		}
	}
	lb := "no load balancer address was ever recorded in its status"
	fd.Leaks = "probably nothing, since no address was recorded; but a load balancer still being provisioned is left in the cloud: check the cloud console"
	if len(addrs) > 0 {
		lb = "its load balancer is " + strings.Join(addrs, ", ")
		fd.Leaks = fmt.Sprintf("the cloud load balancer (%s) and what comes with it (forwarding rules, target groups, security group rules), billed until deleted by hand", strings.Join(addrs, ", "))
	}
	fd.Cause, fd.Catalog = CauseLoadBalancerCleanup, "C7"
	fd.FixOwner = "cluster operator (cloud-controller-manager); cloud admin (credentials, quotas)"
	fd.Remedy = "fix the cloud-controller-manager (or reinstall it) and its cloud credentials; it then deletes the load balancer and removes the finalizer; release only after deleting the load balancer in the cloud yourself"
	owner := "the cloud-controller-manager's state is unknown"
	switch {
	case fd.Owner == nil:
	case fd.Owner.State == OwnerAlive:
		owner = fmt.Sprintf("the cloud-controller-manager runs (%s)", lastEvidence(fd.Owner))
	case fd.Owner.State == OwnerMissing:
		owner = "no cloud-controller-manager workload or Lease was found: on a self-managed cluster nothing will delete the load balancer (managed clusters run it out of sight: ask the provider)"
	case fd.Owner.State == OwnerDown:
		owner = fmt.Sprintf("the cloud-controller-manager does not look alive (%s)", lastEvidence(fd.Owner))
	}
	fd.Message = fmt.Sprintf("the service controller (cloud-controller-manager) removes this finalizer after deleting the Service's cloud load balancer (type %s; %s); %s", svc.Spec.Type, lb, owner)
	fd.Severity = SeverityBlocker
	if evs := e.warningEvents(ctx, obj, 3); len(evs) > 0 {
		fd.Message += "; warning events: " + strings.Join(evs, "; ")
	} else if fd.Owner != nil && fd.Owner.State == OwnerAlive {
		fd.Severity = SeverityWaiting
	}
}

// lastEvidence is the newest evidence about the owner's workload.
func lastEvidence(o *Owner) string {
	for i := len(o.Evidence) - 1; i >= 0; i-- {
		if !strings.HasPrefix(o.Evidence[i], "SubjectAccessReview:") {
			return o.Evidence[i]
		}
	}
	return "no evidence"
}
