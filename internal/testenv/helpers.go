/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package testenv

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var namespaceCounter atomic.Int64

// NewNamespace creates a namespace named after the test, so that tests
// sharing a control plane never see each other's objects. Its "default"
// ServiceAccount may edit it (the built-in edit ClusterRole), as a
// namespace's owner would grant: TeardownPolicies there act as it.
func NewNamespace(t testing.TB, c client.Client) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", strings.ToLower(t.Name()), namespaceCounter.Add(1))
	name = strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(name)
	if len(name) > 60 {
		name = strings.TrimLeft(name[len(name)-60:], "-")
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	if err := GrantServiceAccount(context.Background(), c, name, "default", "edit"); err != nil {
		t.Fatal(err)
	}
	return name
}

// GrantServiceAccount binds clusterRole (such as the built-in "edit") to
// ServiceAccount sa in namespace ns, within ns, and returns once the
// authorizer lets sa get ConfigMaps there (so clusterRole must allow that).
func GrantServiceAccount(ctx context.Context, c client.Client, ns, sa, clusterRole string) error {
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + clusterRole, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	if err := c.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("granting %s to ServiceAccount %s/%s: %w", clusterRole, ns, sa, err)
	}
	// Every role this grants lets its holder get ConfigMaps in ns.
	return WaitAllowedClient(ctx, c, Access(rbacv1.ServiceAccountKind, ns, sa,
		authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "configmaps"}))
}

// Eventually polls cond every 50ms until it holds, failing the test after
// timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Gone is a condition that holds once obj no longer exists.
func Gone(c client.Client, obj client.Object) wait.ConditionWithContextFunc {
	return func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}
