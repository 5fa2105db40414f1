/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestYieldedPolicyKeepsWhatItAttached (issue 16, family 4, found by the
// model test, seed 33): a tenant's TeardownPolicy attaches its key to two
// live ConfigMaps; then a ClusterTeardownPolicy takes the key (it outranks
// every TeardownPolicy) with selectors that match neither. The key is the
// cluster policy's now, but the attachments are the tenant policy's, which
// still owes those objects their cleanup: the cluster policy must not
// release them as "no longer matches". Deleting one runs the tenant's
// cleanup (never the cluster policy's); deleting the tenant's policy then
// lets the other go, since a yielded policy releases what it attached when
// it is uninstalled, like any other. Negative control: a ConfigMap the
// cluster policy selects is attached and cleaned up by it.
func TestYieldedPolicyKeepsWhatItAttached(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/yielded"
	ns := newNamespace(t)
	tenantHook := newCleanupServer(t, func(webhookRequest) answer { return success })
	clusterHook := newCleanupServer(t, func(webhookRequest) answer { return success })
	startController(t, "controller")
	tenant := webhookPolicy(ns, "tenant", key, "db", tenantHook)
	create(t, tenant)
	mustBeReady(t, tenant)
	deleted, kept := configMap(ns, "db-deleted", labels("app", "db")), configMap(ns, "db-kept", labels("app", "db"))
	for _, cm := range []*corev1.ConfigMap{deleted, kept} {
		create(t, cm)
		testenv.Eventually(t, 30*time.Second, "the tenant's policy to attach its key", func(ctx context.Context) (bool, error) { return carries(ctx, cm, key) })
	}

	cluster := clusterWebhookPolicy(t, key, "web", clusterHook)
	mustBeReady(t, cluster)
	testenv.Eventually(t, 30*time.Second, "the tenant's policy to yield", func(context.Context) (bool, error) {
		return readyOf(t, tenant, time.Second).Reason == teardownv1alpha1.FinalizerConflictReason, nil
	})
	web := configMap(ns, "web", labels("app", "web"))
	create(t, web)
	testenv.Eventually(t, 30*time.Second, "the cluster policy to attach its key (negative control)", func(ctx context.Context) (bool, error) { return carries(ctx, web, key) })
	released := poll(3*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, cm := range []*corev1.ConfigMap{deleted, kept} {
			if ok, err := carries(ctx, cm, key); err != nil || !ok {
				return true, err
			}
		}
		return false, nil
	})
	if released {
		t.Fatalf("the key was released from a live object the yielded policy attached:\n%s", describe(deleted, kept))
	}

	deleteNow(t, deleted)
	testenv.Eventually(t, 30*time.Second, "the object to go after the tenant's cleanup", testenv.Gone(k8s, deleted))
	if _, ok := tenantHook.succeeded(deleted.UID); !ok {
		t.Error("the object the tenant's policy attached went without its cleanup")
	}
	if n := clusterHook.callsFor(deleted.UID); n > 0 {
		t.Errorf("the cluster policy called its webhook %d times for an object it never selected", n)
	}
	deleteNow(t, web)
	testenv.Eventually(t, 30*time.Second, "the cluster policy's object to go (negative control)", testenv.Gone(k8s, web))
	if _, ok := clusterHook.succeeded(web.UID); !ok {
		t.Error("the cluster policy's object went without its cleanup")
	}

	deleteNow(t, tenant)
	testenv.Eventually(t, 30*time.Second, "the uninstalled tenant's policy to release what it attached", func(ctx context.Context) (bool, error) {
		ok, err := carries(ctx, kept, key)
		return !ok, err
	})
	testenv.Eventually(t, 30*time.Second, "the tenant's policy to go", testenv.Gone(k8s, tenant))
}

// TestYieldedPolicyServesAgainAfterARestart (issue 16, family 3, found by
// the model test, seed 36): a tenant's TeardownPolicy starts a teardown,
// then yields its key to a ClusterTeardownPolicy; the tenant declares the
// key on an object the policy does not select; the cluster policy goes and
// the controller restarts. The policy was served with this key before (its
// status says so), so the foreign use of the key since is no reason to
// refuse it: it serves again and finishes the teardown it started, instead
// of leaving it stranded with no version in force.
func TestYieldedPolicyServesAgainAfterARestart(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/yield-restart"
	ns := newNamespace(t)
	var succeed atomic.Bool
	hook := newCleanupServer(t, succeedsOnce(&succeed))
	c := startController(t, "controller")
	tenant := webhookPolicy(ns, "tenant", key, "db", hook)
	create(t, tenant)
	mustBeReady(t, tenant)
	cm := configMap(ns, "db", labels("app", "db"))
	create(t, cm)
	testenv.Eventually(t, 30*time.Second, "the tenant's policy to attach its key", func(ctx context.Context) (bool, error) { return carries(ctx, cm, key) })
	deleteNow(t, cm)
	testenv.Eventually(t, 30*time.Second, "the tenant's teardown to start", func(context.Context) (bool, error) { return hook.callsFor(cm.UID) > 0, nil })

	cluster := clusterWebhookPolicy(t, key, "web", hook)
	mustBeReady(t, cluster)
	testenv.Eventually(t, 30*time.Second, "the tenant's policy to yield", func(context.Context) (bool, error) {
		return readyOf(t, tenant, time.Second).Reason == teardownv1alpha1.FinalizerConflictReason, nil
	})
	create(t, configMap(ns, "declared-elsewhere", labels("app", "other"), key))
	deleteNow(t, cluster)
	testenv.Eventually(t, 30*time.Second, "the cluster policy to go", testenv.Gone(k8s, cluster))
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 45*time.Second, "the tenant's policy to serve again", func(context.Context) (bool, error) {
		return readyOf(t, tenant, time.Second).Status == metav1.ConditionTrue, nil
	})
	succeed.Store(true)
	testenv.Eventually(t, 30*time.Second, "the object to go after the teardown the tenant's policy started", testenv.Gone(k8s, cm))
	if _, ok := hook.succeeded(cm.UID); !ok {
		t.Error("the object went without its cleanup")
	}
}
