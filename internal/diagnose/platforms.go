/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CausePlatformAbsent: the finalizer's domain belongs to a platform
// (Crossplane, cert-manager, Rancher, the AWS controllers...) of which
// nothing is installed in this cluster: no CRD or APIService of its groups
// and no workload of it. Nothing here will ever remove the finalizer (B1,
// with its owner provably gone: uninstalled before its objects, or the
// object copied from a cluster that runs it).
const CausePlatformAbsent = "FinalizerPlatformAbsent"

// platform is a product that owns every finalizer of its domains.
type platform struct {
	Name string
	// Domain is the DNS suffix of its finalizers and API groups:
	// acme.cert-manager.io/finalizer and acme.cert-manager.io are
	// cert-manager.io's.
	Domain string
	// Workloads are names (or app.kubernetes.io/name, app labels) of its
	// Deployments, StatefulSets and DaemonSets; one ending in "-" is a
	// prefix (ack-s3-controller).
	Workloads []string
	// Leaks is what skipping its cleanup leaves behind.
	Leaks string
	// Cleanup is the product's own tool for an uninstall gone wrong, if
	// it has one.
	Cleanup string
}

// platforms are the products whose finalizers outlive their uninstall most
// often (research §3.2, §7 item 5).
var platforms = []platform{
	{Name: "Crossplane", Domain: "crossplane.io", Workloads: []string{"crossplane", "crossplane-rbac-manager"},
		Leaks: "the external resources Crossplane and its providers manage (cloud buckets, databases, networks) stay, unmanaged and billed"},
	{Name: "cert-manager", Domain: "cert-manager.io", Workloads: []string{"cert-manager"},
		Leaks: "ACME challenge records (DNS TXT records, HTTP solvers) cert-manager would have removed"},
	{Name: "Rancher (or its Fleet, or the helm-controller of k3s and RKE2)", Domain: "cattle.io", Workloads: []string{"rancher", "cattle-cluster-agent", "fleet-controller", "fleet-agent", "rancher-webhook"},
		Leaks:   "what Rancher set up for the object (role bindings, project and cluster records, downstream agents); rancher-cleanup removes them",
		Cleanup: "run rancher-cleanup (github.com/rancher/rancher-cleanup), which removes Rancher's finalizers and what it set up"},
	{Name: "the AWS controllers (AWS Load Balancer Controller, ACK, Karpenter on AWS)", Domain: "k8s.aws", Workloads: []string{"aws-load-balancer-controller", "karpenter", "ack-"},
		Leaks: "the AWS resources they created for the object (load balancers, target groups, security group rules, EC2 instances)"},
	// Not all of x-k8s.io: Kueue, JobSet, the Gateway API's experimental
	// channel are SIG projects of their own.
	{Name: "Cluster API", Domain: "cluster.x-k8s.io", Workloads: []string{"capi-controller-manager"},
		Leaks: "cloud machines and networks of the cluster"},
	{Name: "Argo (CD, Workflows, Rollouts, Events)", Domain: "argoproj.io", Workloads: []string{"argocd-application-controller", "argocd-server", "workflow-controller", "argo-rollouts"},
		Leaks: "what the Argo controller cleans up for the object (an application's resources in its destination cluster, a workflow's artifacts)"},
	{Name: "Flux", Domain: "fluxcd.io", Workloads: []string{"kustomize-controller", "helm-controller", "source-controller", "notification-controller"},
		Leaks: "resources Flux applied (with prune) and its artifacts"},
	{Name: "Config Connector", Domain: "cnrm.cloud.google.com", Workloads: []string{"cnrm-controller-manager"},
		Leaks: "the Google Cloud resource"},
}

// tokenDomain is the domain a finalizer belongs to: the part before "/"
// (acme.cert-manager.io/finalizer), or the whole token when it has no "/"
// and is dotted (finalizer.acme.cert-manager.io,
// resources-finalizer.argocd.argoproj.io).
func tokenDomain(fin string) string {
	if d, _, ok := strings.Cut(fin, "/"); ok {
		return d
	}
	if strings.Contains(fin, ".") {
		return fin
	}
	return ""
}

// inDomain says whether name is domain or below it.
func inDomain(name, domain string) bool {
	return name == domain || strings.HasSuffix(name, "."+domain)
}

// platformOf is the platform a finalizer belongs to.
func platformOf(fin string) (platform, bool) {
	d := tokenDomain(fin)
	if d == "" {
		return platform{}, false
	}
	for _, p := range platforms {
		if inDomain(d, p.Domain) {
			return p, true
		}
	}
	return platform{}, false
}

// platformWorkload says whether a workload is one of p's: by name or name
// label, or by a label key in p's domain (Crossplane's package manager
// labels a provider's runtime pkg.crossplane.io/revision).
func platformWorkload(p platform, name string, labels map[string]string) bool {
	for _, w := range p.Workloads {
		for _, n := range []string{name, labels["app.kubernetes.io/name"], labels["app"]} {
			if n != "" && (n == w || (strings.HasSuffix(w, "-") && strings.HasPrefix(n, w))) {
				return true
			}
		}
	}
	for k := range labels {
		if prefix, _, ok := strings.Cut(k, "/"); ok && inDomain(prefix, p.Domain) {
			return true
		}
	}
	return false
}

// platformInstalled is the first sign that something of p is installed
// here: a CRD or APIService in its domain, or a workload of it; "" when
// there is none.
func (e *Explainer) platformInstalled(ctx context.Context, p platform) string {
	for _, crd := range e.c.CRDs(ctx) {
		if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); inDomain(g, p.Domain) {
			return "CRD " + crd.GetName()
		}
	}
	for _, s := range e.c.APIServices(ctx) {
		if g, _, _ := unstructured.NestedString(s.Object, "spec", "group"); inDomain(g, p.Domain) {
			return "APIService " + s.GetName()
		}
	}
	for _, w := range workloadList(ctx, e.c) {
		if platformWorkload(p, w.Ref.Name, w.Labels) {
			// Not its name: it may live in a namespace the reader of a
			// tenant's object has no business knowing.
			return "a " + w.Ref.Kind + " of it"
		}
	}
	return ""
}

// platformAbsent: a finalizer whose owner was found nowhere (missing,
// unknown, or no owner at all) and whose domain is a platform's, when
// nothing of that platform is installed here. It is not an orphan typo
// (B5: stripping is the designed remedy) nor a controller that is down
// (B1: restart it): the platform was uninstalled before its objects, and
// only reinstalling it runs its cleanup.
func (e *Explainer) platformAbsent(ctx context.Context, fd *Finding, s subject) {
	o := fd.Owner
	if o != nil && (o.Source == SourcePolicy || o.Workload != nil || o.State == OwnerAlive || o.State == OwnerDown) {
		return
	}
	if s.InCatalog && s.Entry.BuiltIn {
		return
	}
	p, ok := platformOf(fd.Finalizer)
	if !ok {
		return
	}
	if found := e.platformInstalled(ctx, p); found != "" {
		if o != nil {
			o.Evidence = append(o.Evidence, fmt.Sprintf("%s is installed here (%s): only the controller that removes this finalizer was not found", p.Name, found))
		}
		return
	}
	manager := finalizerManager(s.Obj, fd.Finalizer)
	if m, ok := e.runningWriter(ctx, manager); ok {
		// Something that runs wrote the finalizer (family 4): the
		// platform's names do not describe it, but it is not absent.
		if o != nil {
			o.Evidence = append(o.Evidence, fmt.Sprintf("%q, which wrote the finalizer, runs in %s (%s): not absent, whatever %s's names say", manager, m.Workload.Ref, strings.Join(m.Why, "; "), p.Name))
		}
		return
	}
	absent := fmt.Sprintf("no CRD or APIService of *.%s and no workload of %s (%s) in this cluster", p.Domain, p.Name, strings.Join(p.Workloads, ", "))
	evidence := []string{absent}
	if o != nil {
		evidence = append(o.Evidence, absent)
	}
	component := p.Name
	if o != nil && o.Source == SourceCatalog && o.Component != "" {
		component = o.Component // the catalog's, more precise (Rancher)
	}
	fd.Owner = &Owner{Component: component, Source: SourceCatalog, Manager: manager, State: OwnerMissing, Confidence: ConfidenceCertain, Evidence: evidence}
	fd.Cause, fd.Severity = CausePlatformAbsent, SeverityBlocker
	if fd.Catalog == "" || strings.HasPrefix(fd.Catalog, "B") {
		// A more specific row (A9: a finalizer on the Namespace object)
		// stays.
		fd.Catalog = "B1"
	}
	fd.Message = fmt.Sprintf("nothing installed here serves %q: it is a finalizer of %s (*.%s), and there is %s. %s was uninstalled before this object (or the object was copied from a cluster that runs it): nothing will ever remove the finalizer",
		fd.Finalizer, p.Name, p.Domain, absent, p.Name)
	fd.FixOwner = "whoever uninstalled " + p.Name + "; cluster admin"
	target := "<object>"
	if fd.Object != nil {
		target = TargetArg(*fd.Object)
	}
	fd.Remedy = fmt.Sprintf("if %s must still clean up after it, reinstall %s and let it finalize; otherwise, once what it would clean up is removed by hand or accepted as leaked, release the finalizer with the evidence recorded: kubectl teardown release %s --finalizer %s --reason '%s is not installed'",
		p.Name, p.Name, target, fd.Finalizer, p.Name)
	if p.Cleanup != "" {
		fd.Remedy += "; or " + p.Cleanup
	}
	fd.Leaks = "releasing skips " + p.Name + "'s cleanup: " + p.Leaks
}
