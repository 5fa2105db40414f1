/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestNamespaceDeletionResumesAfterKill: a TeardownPolicy and the object it
// guards (a Secret) are in a namespace being deleted; the controller is
// killed with SIGKILL once the policy carries its deletionTimestamp, and
// started again.
// While it is down the RoleBinding that grants the policy's ServiceAccount
// its rights goes (the namespace's deletion deletes it anyway, in no set
// order): the restarted process, which knows only what the API server
// holds, checks the deleted policy again and keeps it in force. Once the
// cleanup webhook answers Success, the object, the policy and the
// namespace all go, within a minute.
func TestNamespaceDeletionResumesAfterKill(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/ns-guard"
	ns := newNamespace(t)
	var succeed atomic.Bool
	srv := newCleanupServer(t, succeedsOnce(&succeed))
	c := startController(t, "controller")
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guard"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key,
			// Only the namespace's RoleBinding grants the ServiceAccount
			// its rights on Secrets (createConfigMapRole).
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Secret", Selector: &metav1.LabelSelector{MatchLabels: labels("app", "guarded")}}},
			Steps:   []teardownv1alpha1.Step{srv.step("cleanup")},
		},
	}
	create(t, pol)
	if cond := waitReady(t, pol, 30*time.Second); cond.Status != metav1.ConditionTrue {
		t.Fatalf("policy not Ready: %s: %s", cond.Reason, cond.Message)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded", Labels: labels("app", "guarded")}}
	create(t, secret)
	testenv.Eventually(t, 30*time.Second, "the Secret to carry "+key, func(ctx context.Context) (bool, error) {
		return carries(ctx, secret, key)
	})

	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := k8s.Delete(context.Background(), nsObj); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the policy and the Secret to carry a deletionTimestamp", func(ctx context.Context) (bool, error) {
		for _, obj := range []client.Object{&teardownv1alpha1.TeardownPolicy{}, &corev1.Secret{}} {
			key := client.ObjectKeyFromObject(pol)
			if _, ok := obj.(*corev1.Secret); ok {
				key = client.ObjectKeyFromObject(secret)
			}
			if err := k8s.Get(ctx, key, obj); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if obj.GetDeletionTimestamp() == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	calls := srv.callsFor(secret.UID)
	// testenv.NewNamespace granted ServiceAccount default "edit" with this
	// RoleBinding; the namespace controller may have deleted it already.
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "default-edit", Namespace: ns}}
	if err := k8s.Delete(context.Background(), binding); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitDeniedClient(context.Background(), k8s, testenv.Access(rbacv1.ServiceAccountKind, ns, "default",
		authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "secrets"})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if !poll(20*time.Second, 100*time.Millisecond, func(context.Context) (bool, error) { return srv.callsFor(secret.UID) > calls, nil }) {
		t.Logf("note: the restarted controller did not call the cleanup webhook for the Secret within 20s")
	}
	if _, ok := srv.succeeded(secret.UID); ok {
		t.Fatalf("harness: the webhook answered Success too early")
	}
	succeed.Store(true)
	start := time.Now()

	goneAll := poll(60*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, obj := range []client.Object{secret, pol, nsObj} {
			if gone, err := testenv.Gone(k8s, obj)(ctx); err != nil || !gone {
				return false, nil
			}
		}
		return true, nil
	})
	if !goneAll {
		t.Errorf("60s after the cleanup webhook began answering Success (%d calls for the Secret, Success answered: %v):\n%s",
			srv.callsFor(secret.UID), succeededString(srv, secret), describe(secret, pol, nsObj))
	} else {
		t.Logf("the Secret, the policy and the namespace went %s after the webhook began answering Success", time.Since(start).Round(100*time.Millisecond))
	}
}

func succeededString(srv *cleanupServer, obj client.Object) string {
	if at, ok := srv.succeeded(obj.GetUID()); ok {
		return at.Format(time.RFC3339Nano)
	}
	return "never"
}

// describe says, for each object, whether it exists, its finalizers, and for
// a namespace its conditions, for failure messages.
func describe(objs ...client.Object) string {
	out := ""
	ctx := context.Background()
	for _, obj := range objs {
		got := obj.DeepCopyObject().(client.Object)
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)
		name := fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj))
		switch {
		case apierrors.IsNotFound(err):
			out += fmt.Sprintf("  %s: gone\n", name)
			continue
		case err != nil:
			out += fmt.Sprintf("  %s: %v\n", name, err)
			continue
		}
		out += fmt.Sprintf("  %s: deletionTimestamp=%v finalizers=%v\n", name, got.GetDeletionTimestamp(), got.GetFinalizers())
		switch o := got.(type) {
		case *corev1.Namespace:
			out += fmt.Sprintf("    spec.finalizers=%v phase=%s\n", o.Spec.Finalizers, o.Status.Phase)
			for _, c := range o.Status.Conditions {
				out += fmt.Sprintf("    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		case *teardownv1alpha1.TeardownPolicy:
			for _, c := range o.Status.Conditions {
				out += fmt.Sprintf("    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
			out += fmt.Sprintf("    guarded=%d terminating=%d blocked=%d\n", o.Status.Guarded, o.Status.Terminating, o.Status.Blocked)
		}
	}
	return out
}
