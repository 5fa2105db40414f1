/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// Issue 17, family 1's negative control: a Crossplane Provider Installed
// and Healthy, its runtime Deployment available, and nothing failing in
// the managed resource's conditions: explain waits on it (the external
// delete is in progress) and blames nothing, the provider least of all.
func TestExplainCrossplaneProviderHealthy(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	gvrStorageBucket := schema.GroupVersionResource{Group: "storage.gcp.upbound.io", Version: "v1beta1", Resource: "buckets"}
	provider := create(t, gvrProvider, map[string]any{"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
		"metadata": map[string]any{"name": "provider-gcp-storage"},
		"spec":     map[string]any{"package": "xpkg.upbound.io/upbound/provider-gcp-storage:v1.8.0"}}, "kubectl-create")
	rev := create(t, gvrProviderRevision, map[string]any{"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
		"metadata": map[string]any{"name": "provider-gcp-storage-4d5e6f", "labels": map[string]any{"pkg.crossplane.io/package": "provider-gcp-storage"},
			"ownerReferences": []any{ownerRef(provider, true)}},
		"spec": map[string]any{"desiredState": "Active", "image": "xpkg.upbound.io/upbound/provider-gcp-storage:v1.8.0", "revision": int64(1)}}, "crossplane")
	create(t, gvrCRD, map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "buckets.storage.gcp.upbound.io", "ownerReferences": []any{ownerRef(rev, true)}},
		"spec": map[string]any{"group": "storage.gcp.upbound.io", "scope": "Cluster",
			"names": map[string]any{"kind": "Bucket", "listKind": "BucketList", "plural": "buckets", "singular": "bucket"},
			"versions": []any{map[string]any{"name": "v1beta1", "served": true, "storage": true, "subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec":   map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}}, "crossplane")
	testenv.Eventually(t, 30*time.Second, "buckets.storage.gcp.upbound.io served", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvrStorageBucket).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	setConditions(t, gvrProvider, provider.GetName(), condition("Installed", "True", "ActivePackageRevision", ""), condition("Healthy", "True", "HealthyPackageRevision", ""))
	setConditions(t, gvrProviderRevision, rev.GetName(), condition("Healthy", "True", "HealthyPackageRevision", ""))
	sys := plugintest.NewNamespace(t, cs, "crossplane-system")
	node := "node-" + sys
	readyNode(t, node)
	runningDeployment(t, sys, rev.GetName(), rev.GetName(), node)
	patch := []byte(`{"metadata":{"labels":{"pkg.crossplane.io/revision":"` + rev.GetName() + `","pkg.crossplane.io/provider":"provider-gcp-storage"}}}`)
	if _, err := cs.AppsV1().Deployments(sys).Patch(ctx, rev.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	plugintest.GrantClusterWide(t, cs, sys, rev.GetName(), "storage.gcp.upbound.io", "buckets")

	bucket := create(t, gvrStorageBucket, map[string]any{"apiVersion": "storage.gcp.upbound.io/v1beta1", "kind": "Bucket",
		"metadata": map[string]any{"name": "media-archive", "finalizers": []any{"finalizer.managedresource.crossplane.io"}},
		"spec":     map[string]any{"forProvider": map[string]any{"location": "EU"}}}, "provider-gcp-storage")
	if err := dyn.Resource(gvrStorageBucket).Delete(ctx, bucket.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	setConditions(t, gvrStorageBucket, bucket.GetName(), condition("Ready", "False", "Deleting", ""), condition("Synced", "True", "ReconcileSuccess", ""))

	rep := explain(t, "bucket.storage.gcp.upbound.io/media-archive")
	f := plugintest.Find(rep, diagnose.CauseCleanupInProgress, "media-archive")
	if rep.Blocked || f == nil || f.Owner == nil || f.Owner.State != diagnose.OwnerAlive || f.Owner.Component != "Crossplane Provider provider-gcp-storage" {
		t.Fatalf("a healthy provider is blamed, or not waited on:\n%s", plugintest.Dump(rep))
	}
	mustContain(t, "message", f.Message, "is Installed and Healthy")
}
