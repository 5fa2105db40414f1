/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// configMap creates a ConfigMap with finalizers, written by manager so
// managedFields name the finalizer's author.
func configMap(t *testing.T, ns, name, manager string, finalizers []string, mutate ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers}}
	for _, m := range mutate {
		m(cm)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
	}
	t.Cleanup(func() { plugintest.DropFinalizers(cs, ns, name) })
	return got
}

func deleteConfigMap(t *testing.T, ns, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	opts := metav1.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, opts); err != nil {
		t.Fatalf("deleting ConfigMap %s/%s: %v", ns, name, err)
	}
}

func deleteNamespace(t *testing.T, ns string) {
	t.Helper()
	if err := cs.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting namespace %s: %v", ns, err)
	}
}

// boundPod creates a running pod bound to node.
func boundPod(t *testing.T, ns, name, node string, labels map[string]string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// rejectingWebhook serves, on loopback with a self-signed certificate, an
// admission webhook that denies every request it gets.
func rejectingWebhook(t *testing.T, message string) (url string, caBundle []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		review := admissionv1.AdmissionReview{}
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Code: http.StatusForbidden, Message: message}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// validatingWebhook registers a webhook on ConfigMaps for operations,
// limited to objects labelled selector.
func validatingWebhook(t *testing.T, name, url string, caBundle []byte, ops []admissionregistrationv1.OperationType, nsSelector, objSelector *metav1.LabelSelector) {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    name + ".teardown.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       nsSelector,
			ObjectSelector:          objSelector,
			TimeoutSeconds:          ptr.To[int32](5),
		}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), vwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating webhook: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// The API server picks configurations up asynchronously.
	time.Sleep(2 * time.Second)
}

// apiService registers an aggregated API served by Service ns/svc.
func apiService(t *testing.T, group, ns, svc string) string {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cfg)
	name := "v1." + group
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": group, "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"insecureSkipTLSVerify": true, "service": map[string]any{"namespace": ns, "name": svc, "port": int64(443)}},
	}}
	if _, err := dyn.Resource(gvrAPIService).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating APIService: %v", err)
	}
	t.Cleanup(func() { _ = dyn.Resource(gvrAPIService).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// emptyService creates a Service with no endpoints.
func emptyService(t *testing.T, ns, name string) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}, Selector: map[string]string{"app": "nothing"}}}
	if _, err := cs.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service: %v", err)
	}
}

// namespaceCondition waits for the namespace controller to set cond True.
func namespaceCondition(t *testing.T, ns string, cond corev1.NamespaceConditionType) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("namespace %s condition %s", ns, cond), func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == cond && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/op"}}}}}}
}

// waitRejected waits until the API server sends updates of ConfigMap ns/name
// to the rejecting webhook (configurations are picked up asynchronously).
func waitRejected(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the webhook to reject updates of "+name, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"probe":"x"}}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "denied the request"), nil
	})
}

// Resources the scenarios create with the dynamic client.
var (
	gvrAPIService = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	gvrPolicy     = schema.GroupVersionResource{Group: "teardown.dev", Version: "v1alpha1", Resource: "teardownpolicies"}
)
