/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// This file holds the engine's only requests that would change something,
// each sent with dryRun=All: the API server runs every check (admission
// webhooks and policies, budgets, validation) and changes nothing. Each
// returns the API server's error, the answer the engine reads.

var dryRunAll = []string{metav1.DryRunAll}

// DryRunEviction asks whether the API server would evict pod ns/name now:
// the eviction a drain sends (POST pods/eviction?dryRun=All). A budget that
// allows no disruption answers 429 Too Many Requests.
func (c *Cluster) DryRunEviction(ctx context.Context, ns, name string) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		DeleteOptions: &metav1.DeleteOptions{DryRun: dryRunAll}}
	rc := c.kube.CoreV1().RESTClient()
	if rc == nil || reflect.ValueOf(rc).IsNil() {
		// client-go's fake has no REST client: its tracker answers the
		// eviction (DeleteOptions carry the dry-run).
		return c.kube.CoreV1().Pods(ns).EvictV1(ctx, ev)
	}
	// dryRun=All in the query too, so that admission (a webhook that acts on
	// evictions) sees a dry-run.
	return rc.Post().Namespace(ns).Resource("pods").Name(name).SubResource("eviction").
		Param("dryRun", metav1.DryRunAll).Body(ev).Do(ctx).Error()
}

// DryRunRemoval sends patch, a JSON patch removing one finalizer (the one
// `kubectl teardown release` would apply), to the object of gvr ns/name.
func (c *Cluster) DryRunRemoval(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, patch []byte) error {
	return c.dryRunPatch(ctx, gvr, ns, name, types.JSONPatchType, patch)
}

// DryRunOrphaning sends patch, a JSON patch removing one ownerReference
// (what the garbage collector does when it orphans a dependent), to the
// object of gvr ns/name.
func (c *Cluster) DryRunOrphaning(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, patch []byte) error {
	return c.dryRunPatch(ctx, gvr, ns, name, types.JSONPatchType, patch)
}

// DryRunStripFinalizers sends a merge patch removing every finalizer of the
// object of gvr ns/name: the write a release (or its owner) would make. It
// needs no read first, so it also works where reads do not.
func (c *Cluster) DryRunStripFinalizers(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	return c.dryRunPatch(ctx, gvr, ns, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
}

// DryRunFinalize sends ns, a namespace whose spec.finalizers lack the token
// to remove (at the resourceVersion read), to its /finalize subresource:
// the write a release of a namespace's token makes.
func (c *Cluster) DryRunFinalize(ctx context.Context, ns *corev1.Namespace) error {
	_, err := c.kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{DryRun: dryRunAll})
	return err
}

func (c *Cluster) dryRunPatch(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, pt types.PatchType, patch []byte) error {
	opts := metav1.PatchOptions{DryRun: dryRunAll}
	var err error
	if ns != "" {
		_, err = c.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, pt, patch, opts)
	} else {
		_, err = c.dyn.Resource(gvr).Patch(ctx, name, pt, patch, opts)
	}
	return err
}
