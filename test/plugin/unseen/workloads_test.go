/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// operator creates a Deployment ns/name running container "manager" with
// command, as ServiceAccount sa, and writes the status its controller would
// with ready replicas (no deployment controller runs here, so it stays as
// written).
func operator(t *testing.T, ns, name, sa string, command []string, image string, ready int32) {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"control-plane": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "manager", Image: image, Command: command}}}}}}
	got, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status = appsv1.DeploymentStatus{ObservedGeneration: got.Generation, Replicas: 1, ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: 1}
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// statefulOperator is operator as a StatefulSet (Argo CD's application
// controller).
func statefulOperator(t *testing.T, ns, name, sa, image string, ready int32) {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": name}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: name, Image: image}}}}}}
	got, err := cs.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status = appsv1.StatefulSetStatus{ObservedGeneration: got.Generation, Replicas: 1, ReadyReplicas: ready, AvailableReplicas: ready, CurrentReplicas: 1, UpdatedReplicas: 1}
	if _, err := cs.AppsV1().StatefulSets(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// grant lets ServiceAccount saNS/sa get, list, watch, patch and update
// resources of group: in namespace scope only (a Role), or everywhere (a
// ClusterRole) when scope is "". It waits until the grant is in effect.
func grant(t *testing.T, saNS, sa, scope, group string, resources ...string) {
	t.Helper()
	ctx := t.Context()
	name := saNS + "-" + sa + "-" + resources[0]
	rules := []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch", "patch", "update"}}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: saNS}}
	if scope == "" {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	} else {
		if _, err := cs.RbacV1().Roles(scope).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().RoleBindings(scope).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := testenv.WaitAllowed(ctx, cs, testenv.Access(rbacv1.ServiceAccountKind, saNS, sa,
		authorizationv1.ResourceAttributes{Group: group, Resource: resources[0], Verb: "patch", Namespace: scope})); err != nil {
		t.Fatal(err)
	}
}
