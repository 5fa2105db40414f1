/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chains

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// Family 4: the operator ran in the namespace being deleted, and the
// namespace controller deleted it with the rest; what it must finalize
// stays. Its workload is gone, but the ClusterRoleBinding of its
// ServiceAccount says where it ran. explain must say that it cannot be
// reinstalled there (a Terminating namespace refuses new objects, which the
// test checks), and how to run it from elsewhere, not "reinstall it".
func TestExplainOperatorGoneWithItsNamespace(t *testing.T) {
	needCluster(t)
	ns := plugintest.NewNamespace(t, cs, "widgets")
	ctx := t.Context()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "widget-operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crName := "widget-operator-" + ns
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: crName},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "update"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: crName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "widget-operator"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crName, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), crName, metav1.DeleteOptions{})
	})
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "widget-operator", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "widget-operator"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "widget-operator"}},
				Spec: corev1.PodSpec{ServiceAccountName: "widget-operator", Containers: []corev1.Container{{Name: "manager", Image: "registry.invalid/widget-operator"}}}}}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "widget-state", Namespace: ns, Finalizers: []string{"widgets.teardown.test/cleanup"}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "widget-operator"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plugintest.DropFinalizers(cs, ns, "widget-state") })
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "the namespace controller to delete the operator", func(ctx context.Context) (bool, error) {
		_, err := cs.AppsV1().Deployments(ns).Get(ctx, "widget-operator", metav1.GetOptions{})
		_, saErr := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "widget-operator", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(saErr), nil
	})
	// What explain says: it cannot be reinstalled there.
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Fatalf("reinstalling the operator in its Terminating namespace: %v, want it refused", err)
	}

	rep := explainUntil(t, 60*time.Second, diagnose.CauseOwnerInTerminatingNamespace, "widget-state", "namespace/"+ns)
	f := plugintest.Root(rep, diagnose.CauseOwnerInTerminatingNamespace, "widget-state")
	for _, want := range []string{"ran in namespace " + ns, "ClusterRoleBinding " + crName + " still grants ServiceAccount " + ns + "/widget-operator", "cannot be reinstalled there, as a Terminating namespace refuses new objects"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	for _, want := range []string{"from another namespace", "through a ClusterRoleBinding (no RoleBinding can be created in a Terminating namespace)", "kubectl teardown release configmaps/widget-state -n " + ns + " --finalizer widgets.teardown.test/cleanup"} {
		if !strings.Contains(f.Remedy, want) {
			t.Errorf("remedy %q lacks %q", f.Remedy, want)
		}
	}
	if !strings.HasPrefix(f.Leaks, "releasing without its cleanup leaks ") || f.Catalog != "A8" {
		t.Errorf("catalog %s, leaks %q", f.Catalog, f.Leaks)
	}
	explainUntil(t, 10*time.Second, diagnose.CauseOwnerInTerminatingNamespace, "widget-state", "configmap/widget-state", "-n", ns)
	text(t, "explain-operator-gone.txt", "explain", "configmap/widget-state", "-n", ns)
}
