/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Causes of this family (see report.go).
const (
	CauseLoadBalancerCleanup = "LoadBalancerCleanupPending" // C7
	CauseServiceCIDRInUse    = "ServiceCIDRInUse"           // C10
	CauseIPAddressAllocated  = "IPAddressStillAllocated"    // C10
)

// networkEntries are the Service and load balancer finalizers (C7, C10).
var networkEntries = []Entry{
	{Finalizer: "service.kubernetes.io/load-balancer-cleanup", Kinds: []string{"Service"}, Component: "service controller (cloud-controller-manager)", Workloads: []string{"cloud-controller-manager"}, ID: "C7",
		Remedy: "fix the cloud-controller-manager or its cloud credentials", Leaks: "the cloud load balancer", Strip: StripRisky,
		Resources: []string{"services"},
		Check:     ownedThen(func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.loadBalancerCleanup(ctx, fd, s.Obj) })},
	{Finalizer: "networking.k8s.io/service-cidr-finalizer", Kinds: []string{"ServiceCIDR"}, Component: "ServiceCIDR controller (kube-controller-manager)", BuiltIn: true, ID: "C10",
		Remedy: "delete the Services whose ClusterIPs are still allocated from the range, or add a ServiceCIDR that covers them",
		Leaks:  "Services keep ClusterIPs that no ServiceCIDR covers any more: the API server's IP repair loop flags them, and the range may no longer be routed", Strip: StripRisky,
		Resources: []string{"servicecidrs.networking.k8s.io"},
		Check:     func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.serviceCIDR(ctx, fd, s.Obj) }},
	{Finalizer: "service.k8s.aws/resources", Component: "AWS Load Balancer Controller", Workloads: []string{"aws-load-balancer-controller"}, ID: "C7",
		Remedy: "fix the controller or its IAM permissions", Leaks: "the AWS load balancer", Strip: StripRisky},
	{Finalizer: "ingress.k8s.aws/resources", Component: "AWS Load Balancer Controller", Workloads: []string{"aws-load-balancer-controller"}, ID: "C7",
		Remedy: "fix the controller or its IAM permissions", Leaks: "the AWS load balancer", Strip: StripRisky},
	{Finalizer: "networking.gke.io/", Prefix: true, Component: "GKE ingress/NEG controller", ID: "C7",
		Remedy: "fix the GKE ingress controller", Leaks: "the Google Cloud load balancer or NEG", Strip: StripRisky},
}

// loadBalancerCleanup: C7. The cloud-controller-manager's service controller
// removes service.kubernetes.io/load-balancer-cleanup once it has deleted the
// Service's cloud load balancer. It runs as a workload (or a static pod)
// with a leader-election Lease on self-managed clusters, and out of sight on
// managed ones.
func (e *Explainer) loadBalancerCleanup(ctx context.Context, fd *Finding, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC {
		return
	}
	svc, err := kube.Typed[corev1.Service](ctx, e.c, corev1.SchemeGroupVersion.WithResource("services"), obj.GetNamespace(), obj.GetName())
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
	// The cloud-controller-manager's service controller reports as
	// "service-controller".
	if evs := e.warningEvents(ctx, obj, 3, "service-controller"); len(evs) > 0 {
		fd.Message += "; warning events: " + strings.Join(evs, "; ")
	} else if fd.Owner != nil && fd.Owner.State == OwnerAlive {
		fd.Severity = SeverityWaiting
	}
}

// serviceCIDR: C10. The ServiceCIDR controller removes its finalizer once no
// IPAddress in the range is left that another ServiceCIDR does not cover.
func (e *Explainer) serviceCIDR(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause, fd.Catalog = CauseServiceCIDRInUse, "C10"
	fd.Owner = e.builtInOwner(ctx, "ServiceCIDR controller (kube-controller-manager)")
	fd.FixOwner = "the owners of the Services still using the range; cluster admin"
	sc, err := e.c.ServiceCIDR(ctx, obj.GetName())
	if err != nil {
		fd.Message = "could not read the ServiceCIDR: " + err.Error()
		return
	}
	mine := parsePrefixes(sc.Spec.CIDRs)
	// Other ServiceCIDRs that stay keep the addresses they also cover.
	var others []netip.Prefix
	cidrs, _ := e.c.ServiceCIDRs(ctx)
	for _, o := range cidrs {
		if o.UID != sc.UID && o.DeletionTimestamp == nil {
			others = append(others, parsePrefixes(o.Spec.CIDRs)...)
		}
	}
	cond := ""
	for _, c := range sc.Status.Conditions {
		if c.Type == "Ready" && c.Status != metav1.ConditionTrue {
			cond = fmt.Sprintf(" (condition Ready=%s %s: %s)", c.Status, c.Reason, c.Message)
		}
	}
	ips, err := e.c.IPAddresses(ctx)
	if err != nil {
		fd.Message = "could not list IPAddresses: " + err.Error() + cond
		return
	}
	for _, ip := range ips {
		addr, err := netip.ParseAddr(ip.Name)
		if err != nil || !prefixesContain(mine, addr) || prefixesContain(others, addr) {
			continue
		}
		ref := ObjectRef{APIVersion: "networking.k8s.io/v1", Kind: "IPAddress", Resource: "ipaddresses", Name: ip.Name, UID: string(ip.UID)}
		user, remedy := "an unknown object", "delete the object that holds the address, or add a ServiceCIDR that covers "+ip.Name
		if p := ip.Spec.ParentRef; p != nil {
			user = fmt.Sprintf("%s %s", strings.TrimSuffix(p.Resource+"."+p.Group, "."), joinNS(p.Namespace, p.Name))
			if p.Group == "" && p.Resource == "services" {
				user = "Service " + joinNS(p.Namespace, p.Name)
				remedy = fmt.Sprintf("delete Service %s (kubectl delete service %s -n %s), or add a ServiceCIDR that covers %s", joinNS(p.Namespace, p.Name), p.Name, p.Namespace, ip.Name)
			}
		}
		if len(fd.Children) == maxChildren {
			fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: "more addresses not shown"})
			break
		}
		fd.Children = append(fd.Children, Finding{Cause: CauseIPAddressAllocated, Catalog: "C10", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("%s is allocated to %s and no other ServiceCIDR covers it", ip.Name, user),
			FixOwner: "the owner of " + user, Remedy: remedy,
			Leaks: "the Service keeps a ClusterIP outside every ServiceCIDR"})
	}
	if n := len(fd.Children); n > 0 {
		fd.Message = fmt.Sprintf("%d IP address(es) in %s are still allocated and no other ServiceCIDR covers them; the ServiceCIDR controller removes the finalizer once they are released%s",
			n, strings.Join(sc.Spec.CIDRs, ", "), cond)
		return
	}
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Severity = SeverityWaiting
	fd.Message = fmt.Sprintf("no address of %s is allocated any more; the ServiceCIDR controller should remove the finalizer (deleting for %s; %s)%s", strings.Join(sc.Spec.CIDRs, ", "), Age(since), fd.Owner.Evidence[0], cond)
	if since > DefaultGCStallAfter || fd.Owner.State == OwnerDown {
		fd.Severity = SeverityBlocker
		fd.FixOwner = "cluster operator (kube-controller-manager)"
		fd.Remedy = "check that kube-controller-manager runs its ServiceCIDR controller; with no address left in the range, releasing the finalizer leaks nothing"
		fd.Leaks = "nothing: no address is allocated from the range"
	}
}

func parsePrefixes(cidrs []string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func prefixesContain(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
