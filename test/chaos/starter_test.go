/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestTeardownOfAFullObjectFinishesUnderItsStarter (issue 27, model seeds
// 110, 118 and 121): two ConfigMaps created with a tenant policy's key and
// annotations that leave no room for Teardown's records are deleted; the
// tenant's policy starts their teardowns, whose step records the API server
// refuses. Then a ClusterTeardownPolicy takes the key (it outranks every
// TeardownPolicy): it selects one of them, not the other. The controller is
// restarted. The cluster policy must call nothing for either object and
// remove no key (the tenant's cleanup is unfinished); once the tenant trims
// them, the tenant's cleanup finishes both, and its
// status.startedTeardowns empties. Negative control: an object of the
// cluster policy's own is torn down by it.
//
// Before the fix nothing durable said which policy had started them: the
// cluster policy ran its own step on the one it selects and removed the
// key (110, 118), and nobody resumed the other once trimmed, since the
// tenant's policy had yielded the key (121).
func TestTeardownOfAFullObjectFinishesUnderItsStarter(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/full"
	ns := newNamespace(t)
	var finish atomic.Bool
	tenantHook := newCleanupServer(t, func(webhookRequest) answer {
		if finish.Load() {
			return success
		}
		return inProgress
	})
	clusterHook := newCleanupServer(t, func(webhookRequest) answer { return success })
	ctrl := startController(t, "controller")
	tenant := webhookPolicy(ns, "tenant", key, "db", tenantHook)
	create(t, tenant)
	mustBeReady(t, tenant)

	// The filler leaves room for no step record (nor attached record).
	filler := strings.Repeat("x", 256*1024-len("fill")-16)
	full := func(name string, lbls map[string]string) *corev1.ConfigMap {
		cm := configMap(ns, name, lbls, key)
		cm.Annotations = map[string]string{"fill": filler}
		create(t, cm)
		return cm
	}
	taken := full("taken", labels("app", "db", "tier", "web"))
	left := full("left", labels("app", "db"))
	for _, cm := range []*corev1.ConfigMap{taken, left} {
		deleteNow(t, cm)
		testenv.Eventually(t, 30*time.Second, "the tenant's policy to start "+cm.Name+"'s teardown", func(context.Context) (bool, error) {
			return tenantHook.callsFor(cm.UID) > 0, nil
		})
	}

	cluster := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "full-object-starter"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key, Targets: []teardownv1alpha1.Target{configMapTarget(labels("tier", "web"))},
			Steps: []teardownv1alpha1.Step{clusterHook.step("platform")},
		},
	}
	create(t, cluster)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cluster) })
	mustBeReady(t, cluster)
	own := configMap(ns, "own", labels("tier", "web"))
	create(t, own)
	testenv.Eventually(t, 30*time.Second, "the cluster policy to attach its key (negative control)", func(ctx context.Context) (bool, error) { return carries(ctx, own, key) })
	if err := ctrl.Restart(); err != nil {
		t.Fatal(err)
	}
	deleteNow(t, own)
	testenv.Eventually(t, 60*time.Second, "the cluster policy's object to go (negative control)", testenv.Gone(k8s, own))

	acted := poll(8*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, cm := range []*corev1.ConfigMap{taken, left} {
			if ok, err := carries(ctx, cm, key); err != nil || !ok {
				return true, err
			}
		}
		return clusterHook.callsFor(taken.UID)+clusterHook.callsFor(left.UID) > 0, nil
	})
	if acted {
		t.Fatalf("the cluster policy acted on a teardown the tenant's policy started (calls: %d, %d):\n%s",
			clusterHook.callsFor(taken.UID), clusterHook.callsFor(left.UID), describe(taken, left))
	}

	testenv.Eventually(t, 20*time.Second, "the tenant policy's status to name both teardowns", func(ctx context.Context) (bool, error) {
		return startedIn(ctx, tenant, taken.UID, left.UID)
	})

	// The tenant trims them: its cleanup goes on and finishes both.
	for _, cm := range []*corev1.ConfigMap{taken, left} {
		patch := []byte(`{"metadata":{"annotations":{"fill":null}}}`)
		if err := k8s.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	finish.Store(true)
	for _, cm := range []*corev1.ConfigMap{taken, left} {
		testenv.Eventually(t, 60*time.Second, cm.Name+" to go after the tenant's cleanup", testenv.Gone(k8s, cm))
		if _, ok := tenantHook.succeeded(cm.UID); !ok {
			t.Errorf("%s went without the tenant's cleanup", cm.Name)
		}
		if n := clusterHook.callsFor(cm.UID); n > 0 {
			t.Errorf("the cluster policy called its webhook %d times for %s, whose teardown the tenant's policy started", n, cm.Name)
		}
	}
	testenv.Eventually(t, 60*time.Second, "the tenant policy's status.startedTeardowns to empty", func(ctx context.Context) (bool, error) {
		p := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(tenant), p); err != nil {
			return false, err
		}
		return len(p.Status.StartedTeardowns) == 0, nil
	})
}

// startedIn reports whether pol's status.startedTeardowns names every uid.
func startedIn(ctx context.Context, pol *teardownv1alpha1.TeardownPolicy, uids ...types.UID) (bool, error) {
	p := &teardownv1alpha1.TeardownPolicy{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), p); err != nil {
		return false, err
	}
	for _, uid := range uids {
		found := false
		for _, e := range p.Status.StartedTeardowns {
			found = found || types.UID(e.UID) == uid
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}
