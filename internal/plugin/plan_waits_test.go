/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// plan of an operator's Deployment that an operator-last ClusterTeardownPolicy
// guards names the custom resources its steps would wait for, in every
// namespace its namespaceSelector reaches: the delete step's in the team's
// namespaces, the wait step's everywhere, with how many nobody is deleting.
// Before, plan showed only the steps' names.
func TestPlanOperatorWaits(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	ops := newNamespace(t)
	a := newNamespace(t, func(n *corev1.Namespace) { n.Labels["team"] = ops })
	b := newNamespace(t, func(n *corev1.Namespace) { n.Labels["team"] = ops })
	c := newNamespace(t)

	const group = "plan28.teardown.test"
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(crds).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{}) })
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	const widgetFin = "widgets.plan28.teardown.test/cleanup"
	for _, ns := range []string{a, b, c} {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": ns, "finalizers": []any{widgetFin}}}}
		testenv.Eventually(t, 30*time.Second, "the CRD to serve", func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(widgets).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
			return err == nil, nil
		})
		t.Cleanup(func() {
			_, _ = dyn.Resource(widgets).Namespace(ns).Patch(context.Background(), "w", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
	}
	// b's widget is being deleted (its operator has not finalized it yet).
	if err := dyn.Resource(widgets).Namespace(b).Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	const fin = "operator.plan28.teardown.test/last"
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "teardown.dev/v1alpha1", "kind": "ClusterTeardownPolicy",
		"metadata": map[string]any{"name": "plan-operator-last"},
		"spec": map[string]any{
			"finalizer": fin,
			"targets":   []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "selector": map[string]any{"matchLabels": map[string]any{"app": "widget-operator"}}}},
			"steps": []any{
				map[string]any{"name": "delete-team-widgets", "delete": map[string]any{"resources": []any{map[string]any{
					"apiVersion": group + "/v1", "kind": "Widget", "selector": map[string]any{"matchExpressions": []any{map[string]any{"key": "keep", "operator": "DoesNotExist"}}},
					"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": ops}}}}}},
				map[string]any{"name": "widgets-gone", "wait": map[string]any{"resources": []any{map[string]any{
					"apiVersion": group + "/v1", "kind": "Widget", "selector": map[string]any{}, "namespaceSelector": map[string]any{}}}}},
			},
		},
	}}
	if _, err := dyn.Resource(gvrClusterPolicy).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(gvrClusterPolicy).Delete(context.Background(), "plan-operator-last", metav1.DeleteOptions{})
	})

	// The operator's Deployment carries the policy's key, as the controller
	// would have added it.
	labels := map[string]string{"app": "widget-operator"}
	if _, err := cs.AppsV1().Deployments(ops).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-operator", Labels: labels, Finalizers: []string{fin}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "registry.invalid/widget-operator"}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.AppsV1().Deployments(ops).Patch(context.Background(), "widget-operator", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	r := cli(t, "", nil, "plan", "deployment/widget-operator", "-n", ops, "-o", "json")
	rep := &PlanReport{}
	if err := json.Unmarshal([]byte(r.out), rep); r.code != ExitOK || err != nil {
		t.Fatalf("plan: exit %d, %v: %s%s", r.code, err, r.out, r.err)
	}
	want := []PlanWait{
		{Finalizer: fin, Step: "delete-team-widgets", Action: "delete", APIVersion: group + "/v1", Kind: "Widget", Scope: "namespaces matching team=" + ops,
			Objects: []PlanWaitObject{{Namespace: a, Name: "w"}, {Namespace: b, Name: "w", Terminating: true}}},
		{Finalizer: fin, Step: "widgets-gone", Action: "wait", APIVersion: group + "/v1", Kind: "Widget", Scope: "every namespace",
			Objects: []PlanWaitObject{{Namespace: a, Name: "w"}, {Namespace: b, Name: "w", Terminating: true}, {Namespace: c, Name: "w"}}},
	}
	for _, w := range want {
		sort.Slice(w.Objects, func(i, j int) bool { return w.Objects[i].Namespace < w.Objects[j].Namespace })
	}
	if diff := cmp.Diff(want, rep.Root.Waits); diff != "" {
		t.Errorf("plan's waits (-want +got):\n%s", diff)
	}

	r = cli(t, "", nil, "plan", "deployment/widget-operator", "-n", ops)
	names := []string{a + "/w", b + "/w", c + "/w"}
	sort.Strings(names)
	line := "wait step widgets-gone: waits until no Widget is left in every namespace; now 3: " + strings.Join(names, ", ") + " (2 not being deleted: they hold it until someone deletes them)"
	if r.code != ExitOK || !strings.Contains(r.out, line) {
		t.Errorf("plan: exit %d, want the line %q in:\n%s%s", r.code, line, r.out, r.err)
	}
}
