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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

var gvrApplication = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// runningStatefulSet creates a StatefulSet and writes the status its
// controller would once its pods are ready (no statefulset controller runs
// here, so it stays as written).
func runningStatefulSet(t *testing.T, ns, name, serviceAccount string) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": name}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: serviceAccount, Containers: []corev1.Container{{Name: "application-controller", Image: "quay.io/argoproj/argocd:v3.1.0"}}}}}}
	got, err := cs.AppsV1().StatefulSets(ns).Create(t.Context(), sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status = appsv1.StatefulSetStatus{ObservedGeneration: got.Generation, Replicas: 1, ReadyReplicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
	if _, err := cs.AppsV1().StatefulSets(ns).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.AppsV1().StatefulSets(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// An Argo CD Application held by resources-finalizer.argocd.argoproj.io
// while the application controller runs: without a word from it, explain
// says the cleanup is in progress; once the controller writes its
// DeletionError condition, explain repeats it as the root cause.
func TestExplainArgoCDDeletionError(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	argocd := plugintest.NewNamespace(t, cs, "argocd")
	runningStatefulSet(t, argocd, "argocd-application-controller", "argocd-application-controller")
	plugintest.GrantClusterWide(t, cs, argocd, "argocd-application-controller", "argoproj.io", "applications")
	for _, fin := range []string{"resources-finalizer.argocd.argoproj.io", "resources-finalizer.argocd.argoproj.io/foreground"} {
		name := "guestbook"
		if fin != "resources-finalizer.argocd.argoproj.io" {
			name = "guestbook-fg"
		}
		app := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": name, "namespace": argocd, "finalizers": []any{fin}},
			"spec": map[string]any{"project": "default",
				"source":      map[string]any{"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "HEAD"},
				"destination": map[string]any{"server": "https://10.0.0.5:6443", "namespace": "guestbook"}},
		}}
		// argocd app create / the API server add the finalizer.
		if _, err := dyn.Resource(gvrApplication).Namespace(argocd).Create(ctx, app, metav1.CreateOptions{FieldManager: "argocd-server"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = dyn.Resource(gvrApplication).Namespace(argocd).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
		if err := dyn.Resource(gvrApplication).Namespace(argocd).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}

		target := []string{"application.argoproj.io/" + name, "-n", argocd}
		rep := explain(t, target...)
		if f := plugintest.Find(rep, diagnose.CauseCleanupInProgress, name); f == nil || rep.Blocked {
			t.Fatalf("%s: before the controller says anything, want cleanup in progress: %+v", fin, rep.Findings)
		}

		// What Argo CD's application controller writes when
		// finalizeApplicationDeletion fails (controller/appcontroller.go:
		// setAppCondition(app, ApplicationCondition{Type:
		// ApplicationConditionDeletionError, Message: err.Error()}), with
		// the lastTransitionTime SetConditions stamps): here, the
		// destination cluster's secret is gone (argoproj/argo-cd#5817).
		// The message carries a line break and a control character, which
		// explain must not repeat.
		now := time.Now().UTC().Format(time.RFC3339)
		status := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
			"type":               "DeletionError",
			"message":            "error getting cluster by server \"https://10.0.0.5:6443\": cluster not found\n\u202e",
			"lastTransitionTime": now,
		}}}}
		u := &unstructured.Unstructured{Object: status}
		data, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(gvrApplication).Namespace(argocd).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: "argocd-application-controller"}); err != nil {
			t.Fatal(err)
		}

		rep = explain(t, target...)
		blocked(t, rep, target...)
		f := root(t, rep, diagnose.CauseOwnerReportsFailure, name)
		if f.Catalog != "B2" || f.Finalizer != fin || f.Owner == nil || f.Owner.State != diagnose.OwnerAlive || f.Owner.Component != "Argo CD application controller" {
			t.Errorf("%s: finding %+v, owner %+v", fin, f, f.Owner)
		}
		mustContain(t, "message", f.Message, `the owner says: condition DeletionError: error getting cluster by server "https://10.0.0.5:6443": cluster not found`)
		if contains(f.Message, "\n") || contains(f.Message, "\u202e") {
			t.Errorf("message repeats control characters: %q", f.Message)
		}
		mustContain(t, "remedy", f.Remedy, "fix what the owner reports", "make the destination cluster reachable")
		if name == "guestbook" {
			recordText(t, "explain-argocd.txt", "explain", "application.argoproj.io/"+name, "-n", argocd)
			// status, which reads the Applications as one list, says it too.
			st := run("status", "-n", argocd)
			mustContain(t, "status", st.Out, "guestbook", "DeletionError")
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
