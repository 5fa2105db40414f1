/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// installedOperator creates Deployment ns/name with replicas wanted and
// writes the status its controller would: ready replicas, and, when not
// all are ready, Available=False with the deployment controller's words.
func installedOperator(t *testing.T, ns, name string, wanted, ready int32) {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{"app.kubernetes.io/name": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(wanted), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "example.com/" + name + ":v1"}}}}}}
	got, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	got.Status = appsv1.DeploymentStatus{ObservedGeneration: got.Generation, Replicas: wanted, ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: wanted}
	if ready < wanted {
		got.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse,
			Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability.", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	}
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Issue 17, family 1: an owner that is installed but not healthy: its
// Deployment scaled to 0 (cert-manager scaled down, as before an upgrade),
// or with no ready replica and
// Available=False (a VictoriaMetrics operator that never became ready).
// explain must say installed but unhealthy, with what its status says,
// and never missing nor not installed. The negative control: the same
// operator ready is not blamed (the cleanup is in progress, nothing is
// blocked).
func TestOwnerInstalledButUnhealthy(t *testing.T) {
	needCluster(t)
	ns := plugintest.NewNamespace(t, cs, "apps")
	for _, tc := range []struct {
		name, operator, fin string
		wanted, ready       int32
		says                []string
	}{
		{"scaled to 0", "cert-manager", "acme.cert-manager.io/finalizer", 0, 0,
			[]string{"installed but scaled to 0", "Deployment ", "/cert-manager has no replica"}},
		{"no ready replica", "victoria-metrics-operator", "apps.victoriametrics.com/finalizer", 1, 0,
			[]string{"installed but unhealthy", "/victoria-metrics-operator at 0 of 1 ready", "its status says Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := plugintest.NewNamespace(t, cs, tc.operator)
			installedOperator(t, ops, tc.operator, tc.wanted, tc.ready)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.operator + "-held", Namespace: ns, Finalizers: []string{tc.fin}}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{FieldManager: tc.operator}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { plugintest.DropFinalizers(cs, ns, cm.Name) })
			if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			rep := explain(t, "configmap/"+cm.Name, "-n", ns)
			f := root(t, rep, "FinalizerOwnerGone")
			if f.Owner == nil || f.Owner.State != "down" || f.Owner.Workload == nil || f.Owner.Workload.Name != tc.operator {
				t.Fatalf("owner %s, want %s down with its workload", dump(f.Owner), tc.operator)
			}
			mustContain(t, "message", f.Message, tc.says...)
			mustNotContain(t, "message", f.Message, "missing", "not installed", "not found", "nothing installed")
			mustContain(t, "remedy", f.Remedy, "do not release")
		})
	}
	t.Run("ready (negative control)", func(t *testing.T) {
		ops := plugintest.NewNamespace(t, cs, "strimzi")
		installedOperator(t, ops, "strimzi-topic-operator", 1, 1)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orders-topic", Namespace: ns, Finalizers: []string{"strimzi.io/topic-operator"}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{FieldManager: "strimzi-topic-operator"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { plugintest.DropFinalizers(cs, ns, cm.Name) })
		if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rep := explain(t, "configmap/"+cm.Name, "-n", ns)
		f := find(rep, "strimzi.io/topic-operator")
		if f == nil || f.Owner == nil || f.Owner.State != "alive" || f.Cause == "FinalizerOwnerGone" {
			t.Fatalf("a ready owner is blamed:\n%s", dump(f))
		}
	})
}
