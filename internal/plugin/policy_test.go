/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// explain names the TeardownPolicy that owns a finalizer, shows its progress
// annotation, and plan lists the steps that will run.
func TestExplainNamesTeardownPolicy(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	dyn := dynamic.NewForConfigOrDie(cfg)
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "teardown.dev/v1alpha1", "kind": "TeardownPolicy",
		"metadata": map[string]any{"name": "dns", "namespace": ns},
		"spec": map[string]any{"finalizer": "shop.example.com/dns-records",
			"targets": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "selector": map[string]any{"matchLabels": map[string]any{"app": "shop"}}}},
			"steps": []any{
				map[string]any{"name": "remove-dns", "webhook": map[string]any{"url": "https://127.0.0.1:1/cleanup"}},
				map[string]any{"name": "pods-gone", "wait": map[string]any{"resources": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "selector": map[string]any{"matchLabels": map[string]any{"app": "shop"}}}}, "condition": "size(objects) == 0"}},
			}},
	}}
	if _, err := dyn.Resource(gvrPolicy).Namespace(ns).Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the policy: %v", err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(gvrPolicy).Namespace(ns).Delete(context.Background(), "dns", metav1.DeleteOptions{})
	})
	progress, _ := json.Marshal(finalizer.Progress{Finalizer: "shop.example.com/dns-records", State: finalizer.StatePending,
		Message: "step remove-dns: DNS API answered 503", Attempts: 4, Updated: time.Now()})
	configMap(t, ns, "web", "teardown-controller", []string{"shop.example.com/dns-records"}, func(cm *corev1.ConfigMap) {
		cm.Labels = map[string]string{"app": "shop"}
		cm.Annotations = map[string]string{finalizer.ProgressAnnotation("shop.example.com/dns-records"): string(progress)}
	})
	r := cli(t, "", nil, "plan", "configmap/web", "-n", ns)
	if r.code != ExitOK || !strings.Contains(r.out, "teardown steps: shop.example.com/dns-records: remove-dns → pods-gone") {
		t.Errorf("plan: exit %d\n%s%s", r.code, r.out, r.err)
	}
	deleteConfigMap(t, ns, "web", "")
	rep := explainJSON(t, "configmap/web", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseOwnerGone, "web")
	if f == nil || f.Owner == nil || f.Owner.Source != diagnose.SourcePolicy || !strings.Contains(f.Owner.Component, "TeardownPolicy "+ns+"/dns") {
		t.Fatalf("the policy is not named as the owner: %+v", rep.Findings)
	}
	if f.Progress == nil || f.Progress.Attempts != 4 || !strings.Contains(f.Message, "DNS API answered 503") {
		t.Errorf("progress not shown: %+v", f)
	}
}
