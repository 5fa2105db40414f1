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
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

var (
	gvrProvider         = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "providers"}
	gvrProviderRevision = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "providerrevisions"}
)

// crossplaneEntries add a check to the finalizer Crossplane providers put on
// their managed resources (its texts are in thirdparty.go): the provider
// is found through the API, never by pod names (research §3.2).
var crossplaneEntries = []Entry{
	{Finalizer: "finalizer.managedresource.crossplane.io",
		Check: ownedThen(func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.crossplaneProvider(ctx, fd, s) })},
}

// crossplaneProvider: a managed resource's finalizer is removed by the
// provider that installed its CRD. Crossplane's package manager makes the
// active ProviderRevision the controller of every CRD of the package, and
// the Provider the owner of its revisions; both carry Installed and Healthy
// conditions (crossplane apis/pkg/v1: TypeInstalled, TypeHealthy,
// RevisionHealthy, RuntimeHealthy, reason UnhealthyPackageRevision...). A
// Provider or revision that is not Healthy is installed but unhealthy, and
// is named with its condition; its runtime Deployment is looked up by the
// labels the package manager sets on it.
func (e *Explainer) crossplaneProvider(ctx context.Context, fd *Finding, s subject) {
	if fd.Cause == CauseOrphanFinalizer {
		return
	}
	rev, provider := e.crossplanePackage(ctx, s.GVK)
	if rev == nil && provider == nil {
		return
	}
	o := &Owner{Source: SourceCatalog, Manager: finalizerManager(s.Obj, fd.Finalizer), State: OwnerAlive}
	name := ""
	if provider != nil {
		name = provider.GetName()
	} else if rev != nil {
		name = rev.GetLabels()["pkg.crossplane.io/package"]
	}
	o.Component = "Crossplane Provider " + orUnknown(name)
	crdName := ""
	if crd := e.crdOf(ctx, s.GVK); crd != nil {
		crdName = crd.GetName()
	}
	var unhealthy []string
	switch {
	case provider == nil:
		o.State = OwnerMissing
		o.Evidence = append(o.Evidence, fmt.Sprintf("CRD %s belongs to ProviderRevision %s, whose Provider %s is gone", crdName, rev.GetName(), orUnknown(name)))
	default:
		ref := ObjectRef{APIVersion: "pkg.crossplane.io/v1", Kind: "Provider", Resource: "providers", Name: provider.GetName(), UID: string(provider.GetUID())}
		o.Workload = &ref
		o.Evidence = append(o.Evidence, fmt.Sprintf("CRD %s is installed by Provider %s", crdName, provider.GetName()))
		unhealthy = append(unhealthy, notTrue(provider, "Provider "+provider.GetName(), "Installed", "Healthy")...)
	}
	if rev != nil {
		unhealthy = append(unhealthy, notTrue(rev, "ProviderRevision "+rev.GetName(), "Healthy", "RevisionHealthy", "RuntimeHealthy")...)
		if w, ok := e.providerRuntime(ctx, rev.GetName(), name); ok {
			if w.ServiceAccount != "" {
				o.ServiceAccount = w.Ref.Namespace + "/" + w.ServiceAccount
			}
			if w.Ready == 0 {
				unhealthy = append(unhealthy, strings.TrimPrefix(e.unhealthy(ctx, w), unhealthyPrefix))
			} else {
				o.Evidence = append(o.Evidence, fmt.Sprintf("its runtime %s has %d of %d replicas ready", w.Ref, w.Ready, w.Desired))
			}
		}
	}
	if len(unhealthy) > 0 && o.State == OwnerAlive {
		o.State = OwnerDown
		o.Evidence = append(o.Evidence, unhealthyPrefix+strings.Join(unhealthy, "; "))
	}
	fd.Owner = o
	switch o.State {
	case OwnerAlive:
		fd.Cause, fd.Catalog, fd.Severity = CauseCleanupInProgress, "B2", SeverityWaiting
		fd.Message = fmt.Sprintf("%s owns %q and is Installed and Healthy; it removes the finalizer once the external resource is deleted", o.Component, fd.Finalizer)
		fd.FixOwner = "application owner / cloud admin"
		fd.Remedy = "wait; if it does not progress, read the resource's Synced and Ready conditions and events (the provider reports delete failures there)"
	default:
		fd.Cause, fd.Catalog, fd.Severity = CauseOwnerGone, "B1", SeverityBlocker
		fd.Message = fmt.Sprintf("%s owns %q and %s", o.Component, fd.Finalizer, ownerState(o))
		if o.State == OwnerMissing {
			fd.Message = fmt.Sprintf("%s owns %q and is gone (%s)", o.Component, fd.Finalizer, lastEvidence(o))
		}
		fd.FixOwner = "platform team (the Crossplane provider)"
		fd.Remedy = fmt.Sprintf("fix the provider: kubectl describe provider.pkg.crossplane.io %s and its providerrevisions (package, runtime Deployment, credentials); it then deletes the external resource and removes the finalizer; releasing leaks the external resource", orUnknown(name))
	}
	if fd.Leaks == "" {
		fd.Leaks = "the external cloud resource"
	}
}

// crossplanePackage finds the ProviderRevision that controls the CRD of
// gvk, and its Provider.
func (e *Explainer) crossplanePackage(ctx context.Context, gvk schema.GroupVersionKind) (rev, provider *unstructured.Unstructured) {
	crd := e.crdOf(ctx, gvk)
	if crd == nil {
		return nil, nil
	}
	for _, r := range crd.GetOwnerReferences() {
		if groupOf(r.APIVersion) != gvrProvider.Group {
			continue
		}
		switch r.Kind {
		case "ProviderRevision":
			if got, err := e.c.ClusterObject(ctx, gvrProviderRevision, r.Name); err == nil {
				rev = got
			}
		case "Provider":
			if got, err := e.c.ClusterObject(ctx, gvrProvider, r.Name); err == nil {
				provider = got
			}
		}
	}
	if rev != nil && provider == nil {
		for _, r := range rev.GetOwnerReferences() {
			if r.Kind == "Provider" && groupOf(r.APIVersion) == gvrProvider.Group {
				if got, err := e.c.ClusterObject(ctx, gvrProvider, r.Name); err == nil {
					provider = got
				}
			}
		}
	}
	return rev, provider
}

// crdOf is the CRD serving gvk, from the run's list of CRDs.
func (e *Explainer) crdOf(ctx context.Context, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	crds := e.c.CRDs(ctx)
	for i := range crds {
		g, _, _ := unstructured.NestedString(crds[i].Object, "spec", "group")
		k, _, _ := unstructured.NestedString(crds[i].Object, "spec", "names", "kind")
		if g == gvk.Group && k == gvk.Kind {
			return &crds[i]
		}
	}
	return nil
}

// providerRuntime is the Deployment running a provider revision, labelled
// by Crossplane's package manager.
func (e *Explainer) providerRuntime(ctx context.Context, revision, provider string) (workload, bool) {
	for _, w := range workloadList(ctx, e.c) {
		if w.Labels["pkg.crossplane.io/revision"] == revision || (provider != "" && w.Labels["pkg.crossplane.io/provider"] == provider) {
			return w, true
		}
	}
	return workload{}, false
}

// notTrue lists the conditions of types, present on u and not True, as
// "Provider x Healthy=False (UnhealthyPackageRevision: message)".
func notTrue(u *unstructured.Unstructured, what string, types ...string) []string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []string
	for _, raw := range conds {
		c, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { v, _ := c[k].(string); return v }
		if !containsString(types, str("type")) || str("status") == "True" {
			continue
		}
		s := fmt.Sprintf("%s %s=%s", what, cleantext.Clean(str("type"), 64), cleantext.Clean(str("status"), 16))
		detail := cleantext.Clean(str("reason"), 64)
		if m := cleantext.Clean(str("message"), 160); m != "" {
			if detail != "" {
				detail += ": "
			}
			detail += m
		}
		if detail != "" {
			s += " (" + detail + ")"
		}
		out = append(out, s)
	}
	return out
}
