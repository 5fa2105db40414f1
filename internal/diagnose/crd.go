/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Causes of this family (see report.go).
const (
	CauseCRDInstancesRemain = "CRDInstancesRemain" // C9
)

// crdEntries are the CRD cleanup finalizer (C9).
var crdEntries = []Entry{
	{Finalizer: "customresourcecleanup.apiextensions.k8s.io", Kinds: []string{"CustomResourceDefinition"}, Component: "CRD finalizer (kube-apiserver)", BuiltIn: true, ID: "C9",
		Remedy: "make the custom resources go away: reinstall their operator or handle each one's finalizer; fix a broken conversion webhook",
		Leaks:  "every remaining custom resource stays in etcd and comes back when the CRD is reinstalled", Strip: StripForbidden,
		Resources: []string{"customresourcedefinitions.apiextensions.k8s.io"},
		Check:     func(e *Explainer, ctx context.Context, fd *Finding, s subject) { e.crdCleanup(ctx, fd, s.Obj, s.Depth) }},
}

// crdCleanup: C9.
func (e *Explainer) crdCleanup(ctx context.Context, fd *Finding, obj metav1.Object, depth int) {
	fd.Owner = &Owner{Component: "CRD finalizer (kube-apiserver)", Source: SourceCatalog, State: OwnerAlive}
	fd.Cause = CauseCRDInstancesRemain
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	condMsg := ""
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Terminating" {
			condMsg = fmt.Sprintf(" (condition Terminating=%v %v: %v)", m["status"], m["reason"], m["message"])
		}
	}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
	version := ""
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if s, _ := m["storage"].(bool); s {
			version, _ = m["name"].(string)
		}
	}
	res := kube.APIResource{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, Kind: kind, Namespaced: scope == "Namespaced"}
	items, errs := e.c.ListMeta(ctx, []kube.APIResource{res}, "", "", 1)
	if len(errs) > 0 {
		fd.Message = fmt.Sprintf("the custom resources cannot be listed: %v%s", errs[0], condMsg)
		return
	}
	if len(items) == 0 {
		fd.Severity = SeverityWaiting
		fd.Message = "no custom resource remains; kube-apiserver removes the finalizer within a minute" + condMsg
		return
	}
	fd.Message = fmt.Sprintf("%d %s remain; kube-apiserver removes the finalizer only once all are gone%s", len(items), plural, condMsg)
	fd.FixOwner = "the owner of the custom resources' finalizers"
	fd.Leaks = fmt.Sprintf("the %d remaining %s stay in etcd and come back when the CRD is reinstalled", len(items), plural)
	for i, it := range items {
		if i == maxChildren {
			fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more not shown", len(items)-maxChildren)})
			break
		}
		fd.Children = append(fd.Children, e.dependentNode(ctx, it, depth+1))
	}
}

// CRDInstances lists the custom resources of a CRD (up to the
// engine's detail limit) that removing its cleanup finalizer by hand would
// leave in etcd.
func (e *Explainer) CRDInstances(ctx context.Context, crd *unstructured.Unstructured) []ObjectRef {
	fd := Finding{}
	e.crdCleanup(ctx, &fd, crd, maxDepth)
	var out []ObjectRef
	for _, c := range fd.Children {
		if c.Object != nil {
			out = append(out, *c.Object)
		}
	}
	return out
}
