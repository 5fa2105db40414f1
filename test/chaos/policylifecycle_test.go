/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"encoding/json"
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

// guardedConfigMaps creates n ConfigMaps labelled app=guarded in ns and
// waits until each carries key.
func guardedConfigMaps(t *testing.T, ns, key string, n int) []*corev1.ConfigMap {
	t.Helper()
	var cms []*corev1.ConfigMap
	for i := range n {
		cm := configMap(ns, "guarded-"+string(rune('a'+i)), labels("app", "guarded"))
		create(t, cm)
		cms = append(cms, cm)
	}
	for _, cm := range cms {
		testenv.Eventually(t, 30*time.Second, cm.Name+" to carry "+key, func(ctx context.Context) (bool, error) {
			return carries(ctx, cm, key)
		})
	}
	return cms
}

// stillHeld fails the test if any of objs goes within d.
func stillHeld(t *testing.T, d time.Duration, why string, objs ...client.Object) {
	t.Helper()
	gone := poll(d, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		for _, obj := range objs {
			if g, err := testenv.Gone(k8s, obj)(ctx); err != nil || g {
				return true, err
			}
		}
		return false, nil
	})
	if gone {
		t.Fatalf("%s, but an object went:\n%s", why, describe(objs...))
	}
}

// TestReleaseOnPolicyDeletionIsNotNamespaceDeletion (issue 16, family 1): a
// TeardownPolicy with onPolicyDeletion Release guards three ConfigMaps whose
// cleanup webhook answers InProgress. Deleting the namespace deletes the
// policy with everything else; that is no uninstall of the policy, so
// nothing may go before its cleanup succeeded. Negative control: deleting
// the policy alone releases a teardown in progress, as Release says.
func TestReleaseOnPolicyDeletionIsNotNamespaceDeletion(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/ns-release"
	var succeed atomic.Bool
	srv := newCleanupServer(t, succeedsOnce(&succeed))
	startController(t, "controller")
	newPolicy := func(ns string) *teardownv1alpha1.TeardownPolicy {
		pol := &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-on-uninstall"},
			Spec: teardownv1alpha1.TeardownPolicySpec{
				Finalizer:        key,
				Targets:          []teardownv1alpha1.Target{configMapTarget(labels("app", "guarded"))},
				Steps:            []teardownv1alpha1.Step{srv.step("cleanup")},
				OnPolicyDeletion: teardownv1alpha1.PolicyDeletionRelease,
			},
		}
		create(t, pol)
		if cond := waitReady(t, pol, 30*time.Second); cond.Status != metav1.ConditionTrue {
			t.Fatalf("policy not Ready: %s: %s", cond.Reason, cond.Message)
		}
		return pol
	}

	t.Run("namespace-deleted", func(t *testing.T) {
		ns := newNamespace(t)
		pol := newPolicy(ns)
		cms := guardedConfigMaps(t, ns, key, 3)
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := k8s.Delete(context.Background(), nsObj); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 60*time.Second, "the policy to be Terminating", func(ctx context.Context) (bool, error) {
			got := &teardownv1alpha1.TeardownPolicy{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return got.DeletionTimestamp != nil, nil
		})
		var objs []client.Object
		for _, cm := range cms {
			objs = append(objs, cm)
		}
		stillHeld(t, 10*time.Second, "the webhook never answered Success and the namespace, not the policy, was being deleted", objs...)
		succeed.Store(true)
		for _, cm := range cms {
			testenv.Eventually(t, 60*time.Second, cm.Name+" to go after its cleanup", testenv.Gone(k8s, cm))
			if _, ok := srv.succeeded(cm.UID); !ok {
				t.Errorf("%s went without a Success", cm.Name)
			}
		}
		testenv.Eventually(t, 60*time.Second, "the namespace to go", testenv.Gone(k8s, nsObj))
	})

	t.Run("policy-deleted-negative-control", func(t *testing.T) {
		succeed.Store(false)
		ns := newNamespace(t)
		pol := newPolicy(ns)
		cms := guardedConfigMaps(t, ns, key, 1)
		if err := k8s.Delete(context.Background(), cms[0]); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, "the cleanup to start", func(context.Context) (bool, error) {
			return srv.callsFor(cms[0].UID) > 0, nil
		})
		if err := k8s.Delete(context.Background(), pol); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, "onPolicyDeletion Release to let the teardown go", testenv.Gone(k8s, cms[0]))
		if _, ok := srv.succeeded(cms[0].UID); ok {
			t.Fatal("harness: the webhook answered Success")
		}
	})
}

// TestDeletedPolicyServesOnlyACheckedSpec (issue 16, family 3): a
// Terminating policy's spec can be edited where the admission policy
// teardown-freeze-deleted-policies is not installed (as here). An edit that
// a live policy would be refused for (its ServiceAccount cm-only may not
// patch Secrets, yet the edit guards them with the foreign key
// platform.example.com/protect) must not be put in force: the Secret that carries that key keeps it, and no webhook is
// called for it. Negative control: the same spec on a live policy is
// refused with Forbidden.
func TestDeletedPolicyServesOnlyACheckedSpec(t *testing.T) {
	testenv.SkipShort(t)
	const key, foreign = "example.com/frozen", "platform.example.com/protect"
	ns := newNamespace(t)
	// Success for the Secret: an unchecked spec in force would remove the
	// foreign key at once.
	srv := newCleanupServer(t, func(req webhookRequest) answer {
		if req.Object.Name == "victim" {
			return success
		}
		return inProgress
	})
	startController(t, "controller")
	if err := testenv.GrantServiceAccount(context.Background(), k8s, ns, "cm-only", "teardown-chaos-configmaps"); err != nil {
		t.Fatal(err)
	}
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "frozen"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			// cm-only may edit ConfigMaps here and nothing else.
			ServiceAccountName: "cm-only",
			Finalizer:          key,
			Targets:            []teardownv1alpha1.Target{configMapTarget(labels("app", "guarded"))},
			Steps:              []teardownv1alpha1.Step{srv.step("cleanup")},
		},
	}
	create(t, pol)
	if cond := waitReady(t, pol, 30*time.Second); cond.Status != metav1.ConditionTrue {
		t.Fatalf("policy not Ready: %s: %s", cond.Reason, cond.Message)
	}
	// A teardown in progress keeps the deleted policy Terminating.
	cm := guardedConfigMaps(t, ns, key, 1)[0]
	if err := k8s.Delete(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	victim := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "victim", Labels: labels("app", "guarded"), Finalizers: []string{foreign}}}
	create(t, victim)
	t.Cleanup(func() {
		_ = k8s.Patch(context.Background(), victim, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	if err := k8s.Delete(context.Background(), victim); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	edited := teardownv1alpha1.TeardownPolicySpec{
		ServiceAccountName: "cm-only",
		Finalizer:          foreign,
		Targets:            []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Secret", Selector: &metav1.LabelSelector{MatchLabels: labels("app", "guarded")}}},
		Steps:              []teardownv1alpha1.Step{srv.step("cleanup")},
	}
	patch, err := json.Marshal(map[string]any{"spec": edited})
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Patch(context.Background(), pol, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("editing the deleted policy: %v", err)
	}
	held := poll(8*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		ok, err := carries(ctx, victim, foreign)
		return !ok, err
	})
	if got := (&teardownv1alpha1.TeardownPolicy{}); k8s.Get(context.Background(), client.ObjectKeyFromObject(pol), got) == nil {
		t.Logf("the deleted policy after the edit: generation %d, status %+v", got.Generation, got.Status.Conditions)
	}
	if held {
		t.Fatalf("the deleted policy's unchecked spec removed %s from a Secret its ServiceAccount may not patch", foreign)
	}
	if n := srv.callsFor(victim.UID); n > 0 {
		t.Errorf("the webhook was called %d times for the Secret", n)
	}

	live := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live"}, Spec: edited}
	create(t, live)
	if cond := waitReady(t, live, 30*time.Second); cond.Reason != teardownv1alpha1.ForbiddenReason {
		t.Fatalf("negative control: a live policy with the edited spec is %s (%s), not Forbidden", cond.Reason, cond.Message)
	} else {
		t.Logf("a live policy with the same spec: %s: %s", cond.Reason, cond.Message)
	}
}

// TestServedVersionSurvivesRestart (issue 16, found by TestModel seed 2): a
// teardown starts under a policy; the policy is then edited into a spec that
// cannot be served (its new key is on an object it does not select: another
// controller's) and deleted; the controller is killed and started again.
// The version in force before must still finish the teardown it started:
// it is recorded in status.servedSpec, not only in the killed process's
// memory. Without that record nothing serves the policy after the restart,
// and the object stays Terminating for ever.
func TestServedVersionSurvivesRestart(t *testing.T) {
	testenv.SkipShort(t)
	const key, taken = "example.com/served", "example.com/taken"
	ns := newNamespace(t)
	var succeed atomic.Bool
	srv := newCleanupServer(t, succeedsOnce(&succeed))
	c := startController(t, "controller")
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "served"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key,
			Targets:   []teardownv1alpha1.Target{configMapTarget(labels("app", "guarded"))},
			Steps:     []teardownv1alpha1.Step{srv.step("cleanup")},
		},
	}
	create(t, pol)
	if cond := waitReady(t, pol, 30*time.Second); cond.Status != metav1.ConditionTrue {
		t.Fatalf("policy not Ready: %s: %s", cond.Reason, cond.Message)
	}
	cm := guardedConfigMaps(t, ns, key, 1)[0]
	if err := k8s.Delete(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the cleanup to start", func(context.Context) (bool, error) { return srv.callsFor(cm.UID) > 0, nil })

	// Another controller's key on an object the policy does not select.
	other := configMap(ns, "other", labels("app", "other"), taken)
	create(t, other)
	t.Cleanup(func() {
		_ = k8s.Patch(context.Background(), other, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"finalizer": taken}})
	if err := k8s.Patch(context.Background(), pol, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	cond := waitReady(t, pol, 30*time.Second)
	if cond.Status == metav1.ConditionTrue || !strings.Contains(cond.Message, "stays in force") {
		t.Fatalf("after the edit: Ready=%s %s: %s; want not Ready, the version before in force", cond.Status, cond.Reason, cond.Message)
	}
	if err := k8s.Delete(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	calls := srv.callsFor(cm.UID)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the restarted controller to go on with the cleanup", func(context.Context) (bool, error) {
		return srv.callsFor(cm.UID) > calls, nil
	})
	succeed.Store(true)
	testenv.Eventually(t, 30*time.Second, "the object to go after its cleanup", testenv.Gone(k8s, cm))
	if _, ok := srv.succeeded(cm.UID); !ok {
		t.Error("the object went without its cleanup")
	}
	if ok, err := carries(context.Background(), other, taken); err != nil || !ok {
		t.Errorf("the other controller's key was removed (carries=%v, err=%v)", ok, err)
	}
	testenv.Eventually(t, 30*time.Second, "the deleted policy to go", testenv.Gone(k8s, pol))
}
