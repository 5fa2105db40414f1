/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugintest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/teardown-dev/teardown/internal/testenv"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

var nsCounter atomic.Int64

// NewNamespace creates a namespace named prefix-N for one test (short names
// read well in docs/cli.md, where some outputs are recorded).
func NewNamespace(t testing.TB, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, nsCounter.Add(1))
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// DropFinalizers removes ConfigMap ns/name's finalizers, so a test's
// objects go at its end; errors are ignored (it may be gone already).
func DropFinalizers(cs kubernetes.Interface, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
}

// NotReadyNode creates a Node whose kubelet stopped reporting, as the node
// lifecycle controller leaves it, and deletes it at the end of the test.
func NotReadyNode(t testing.TB, cs kubernetes.Interface, name string) {
	t.Helper()
	got, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node: %v", err)
	}
	got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting node status: %v", err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// GrantClusterWide lets ServiceAccount ns/sa get, patch and update
// resources of group everywhere, as an operator's packaged RBAC does, until
// the end of the test.
func GrantClusterWide(t testing.TB, cs kubernetes.Interface, ns, sa, group string, resources ...string) {
	t.Helper()
	name := ns + "-" + sa + "-" + resources[0]
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch", "patch", "update"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// Diagnoses read this identity's RBAC: a grant not yet in effect would
	// be reported as missing.
	if err := testenv.WaitAllowed(t.Context(), cs, testenv.Access(rbacv1.ServiceAccountKind, ns, sa,
		authorizationv1.ResourceAttributes{Group: group, Resource: resources[0], Verb: "patch"})); err != nil {
		t.Fatal(err)
	}
}
