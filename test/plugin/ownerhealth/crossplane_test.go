/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	gvrProvider         = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "providers"}
	gvrProviderRevision = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "providerrevisions"}
	gvrCRD              = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrBucket           = schema.GroupVersionResource{Group: "s3.aws.upbound.io", Version: "v1beta1", Resource: "buckets"}
)

// condition is a crossplane-runtime Condition.
func condition(typ, status, reason, message string) map[string]any {
	c := map[string]any{"type": typ, "status": status, "reason": reason, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	if message != "" {
		c["message"] = message
	}
	return c
}

// setConditions writes status.conditions of a cluster-scoped object
// through its status subresource, as Crossplane's controllers do.
func setConditions(t *testing.T, gvr schema.GroupVersionResource, name string, conds ...map[string]any) {
	t.Helper()
	u, err := dyn.Resource(gvr).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := make([]any, len(conds))
	for i, c := range conds {
		list[i] = c
	}
	if err := unstructured.SetNestedSlice(u.Object, list, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(gvr).UpdateStatus(t.Context(), u, metav1.UpdateOptions{FieldManager: "crossplane"}); err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, gvr schema.GroupVersionResource, obj map[string]any, manager string) *unstructured.Unstructured {
	t.Helper()
	got, err := dyn.Resource(gvr).Create(t.Context(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("creating %s: %v", gvr.Resource, err)
	}
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvr).Patch(context.Background(), got.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = dyn.Resource(gvr).Delete(context.Background(), got.GetName(), metav1.DeleteOptions{})
	})
	return got
}

func ownerRef(u *unstructured.Unstructured, controller bool) map[string]any {
	return map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "name": u.GetName(), "uid": string(u.GetUID()), "controller": controller, "blockOwnerDeletion": true}
}

// A Crossplane managed resource held by finalizer.managedresource.crossplane.io
// whose Provider is installed but not Healthy, and whose runtime Deployment
// has no ready pod: explain names the Provider with its condition and the
// Deployment's state. Once the provider is healthy and says, in the
// resource's Synced condition, why the external delete fails, explain
// repeats that.
func TestExplainCrossplaneProviderUnhealthy(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	provider := create(t, gvrProvider, map[string]any{"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
		"metadata": map[string]any{"name": "provider-aws-s3"},
		"spec":     map[string]any{"package": "xpkg.upbound.io/upbound/provider-aws-s3:v1.21.0"}}, "kubectl-create")
	rev := create(t, gvrProviderRevision, map[string]any{"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
		"metadata": map[string]any{"name": "provider-aws-s3-7e8f9a0b1c2d", "labels": map[string]any{"pkg.crossplane.io/package": "provider-aws-s3"},
			"ownerReferences": []any{ownerRef(provider, true)}},
		"spec": map[string]any{"desiredState": "Active", "image": "xpkg.upbound.io/upbound/provider-aws-s3:v1.21.0", "revision": int64(1)}}, "crossplane")
	// The package's CRD, controlled by the active revision (Crossplane's
	// package manager establishes control of every object of the package).
	create(t, gvrCRD, map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "buckets.s3.aws.upbound.io", "ownerReferences": []any{ownerRef(rev, true)}},
		"spec": map[string]any{"group": "s3.aws.upbound.io", "scope": "Cluster",
			"names": map[string]any{"kind": "Bucket", "listKind": "BucketList", "plural": "buckets", "singular": "bucket", "categories": []any{"crossplane", "managed", "aws"}},
			"versions": []any{map[string]any{"name": "v1beta1", "served": true, "storage": true, "subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec":   map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}}, "crossplane")
	testenv.Eventually(t, 30*time.Second, "buckets.s3.aws.upbound.io served", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvrBucket).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	// The package manager's verdict: installed, not healthy (crossplane
	// apis/pkg/v1: TypeInstalled/ReasonActive, TypeHealthy/ReasonUnhealthy).
	setConditions(t, gvrProvider, provider.GetName(),
		condition("Installed", "True", "ActivePackageRevision", ""),
		condition("Healthy", "False", "UnhealthyPackageRevision", "post establish runtime hook failed for package: provider package deployment has no condition of type \"Available\" yet"))
	setConditions(t, gvrProviderRevision, rev.GetName(),
		condition("Healthy", "False", "UnhealthyPackageRevision", "post establish runtime hook failed for package: provider package deployment has no condition of type \"Available\" yet"))
	// Its runtime: a Deployment labelled with the revision, whose pod stays
	// Pending.
	sys := plugintest.NewNamespace(t, cs, "crossplane-system")
	dep := deploymentOf(sys, "provider-aws-s3-7e8f9a0b1c2d", "provider-aws-s3-7e8f9a0b1c2d", 1)
	dep.Labels["pkg.crossplane.io/revision"] = rev.GetName()
	dep.Labels["pkg.crossplane.io/provider"] = "provider-aws-s3"
	if _, err := cs.AppsV1().Deployments(sys).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AppsV1().Deployments(sys).Delete(context.Background(), dep.Name, metav1.DeleteOptions{})
	})
	plugintest.GrantClusterWide(t, cs, sys, dep.Name, "s3.aws.upbound.io", "buckets")
	testenv.Eventually(t, 30*time.Second, "the provider's pod", func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(sys).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + dep.Name})
		return err == nil && len(l.Items) == 1, err
	})

	bucket := create(t, gvrBucket, map[string]any{"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket",
		"metadata": map[string]any{"name": "invoices-archive", "finalizers": []any{"finalizer.managedresource.crossplane.io"}},
		"spec":     map[string]any{"forProvider": map[string]any{"region": "eu-west-1"}}}, "provider-aws-s3")
	if err := dyn.Resource(gvrBucket).Delete(ctx, bucket.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	target := []string{"bucket.s3.aws.upbound.io/invoices-archive"}
	rep := explain(t, target...)
	blocked(t, rep, target...)
	f := root(t, rep, diagnose.CauseOwnerGone, "invoices-archive")
	if f.Owner == nil || f.Owner.Component != "Crossplane Provider provider-aws-s3" || f.Owner.State != diagnose.OwnerDown || f.Owner.Workload == nil || f.Owner.Workload.Kind != "Provider" {
		t.Fatalf("owner = %+v", f.Owner)
	}
	mustContain(t, "message", f.Message, "is installed but unhealthy: Provider provider-aws-s3 Healthy=False (UnhealthyPackageRevision: post establish runtime hook failed",
		"ProviderRevision provider-aws-s3-7e8f9a0b1c2d Healthy=False",
		"Deployment "+sys+"/provider-aws-s3-7e8f9a0b1c2d at 0 of 1 ready (1 pod(s) Pending, not scheduled to a node)")
	for _, wrong := range []string{"missing", "not found", "no workload"} {
		if strings.Contains(f.Message, wrong) {
			t.Errorf("message says %q: %s", wrong, f.Message)
		}
	}
	mustContain(t, "remedy", f.Remedy, "kubectl describe provider.pkg.crossplane.io provider-aws-s3")
	recordText(t, "explain-crossplane.txt", "explain", target[0])

	// The provider recovers and reports why the external delete fails
	// (crossplane-runtime's managed reconciler: ReconcileError wrapping
	// "delete failed"; the AWS error is illustrative).
	node := "node-" + sys
	readyNode(t, node)
	l, err := cs.CoreV1().Pods(sys).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + dep.Name})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("provider pods: %v %v", l, err)
	}
	bind(t, sys, l.Items[0].Name, node)
	kubeletRunning(t, sys, l.Items[0].Name)
	setConditions(t, gvrProvider, provider.GetName(), condition("Installed", "True", "ActivePackageRevision", ""), condition("Healthy", "True", "HealthyPackageRevision", ""))
	setConditions(t, gvrProviderRevision, rev.GetName(), condition("Healthy", "True", "HealthyPackageRevision", ""))
	setConditions(t, gvrBucket, bucket.GetName(),
		condition("Ready", "False", "Deleting", ""),
		condition("Synced", "False", "ReconcileError", "delete failed: operation error S3: DeleteBucket, https response error StatusCode: 409, BucketNotEmpty: The bucket you tried to delete is not empty"))
	testenv.Eventually(t, 30*time.Second, "explain to see the provider healthy", func(ctx context.Context) (bool, error) {
		rep = explain(t, target...)
		return plugintest.Find(rep, diagnose.CauseOwnerReportsFailure, "invoices-archive") != nil, nil
	})
	blocked(t, rep, target...)
	f = root(t, rep, diagnose.CauseOwnerReportsFailure, "invoices-archive")
	mustContain(t, "message", f.Message, "the owner says: condition Synced=False: ReconcileError: delete failed: operation error S3: DeleteBucket", "Crossplane Provider provider-aws-s3 owns")
	if f.Owner.State != diagnose.OwnerAlive {
		t.Errorf("owner = %+v", f.Owner)
	}
}
