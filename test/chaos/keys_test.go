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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// readyOf waits for a policy's (of either kind) Ready condition of its
// generation and returns it.
func readyOf(t *testing.T, pol client.Object, timeout time.Duration) metav1.Condition {
	t.Helper()
	var cond metav1.Condition
	testenv.Eventually(t, timeout, pol.GetName()+"'s Ready condition", func(ctx context.Context) (bool, error) {
		got := pol.DeepCopyObject().(client.Object)
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		var conds []metav1.Condition
		switch p := got.(type) {
		case *teardownv1alpha1.TeardownPolicy:
			conds = p.Status.Conditions
		case *teardownv1alpha1.ClusterTeardownPolicy:
			conds = p.Status.Conditions
		}
		c := meta.FindStatusCondition(conds, teardownv1alpha1.ReadyCondition)
		if c == nil || c.ObservedGeneration != got.GetGeneration() {
			return false, nil
		}
		cond = *c
		return true, nil
	})
	return cond
}

// webhookPolicy is a TeardownPolicy of ns that guards the ConfigMaps
// labelled app=<app> with key, its one step (named after the policy)
// calling hook.
func webhookPolicy(ns, name, key, app string, hook *cleanupServer) *teardownv1alpha1.TeardownPolicy {
	return &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key, Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", app))},
			Steps: []teardownv1alpha1.Step{hook.step(name)},
		},
	}
}

// clusterWebhookPolicy is a ClusterTeardownPolicy named after the test
// that guards the ConfigMaps labelled app=<app> with key, its one step
// ("platform") calling hook; it is deleted when the test ends.
func clusterWebhookPolicy(t *testing.T, key, app string, hook *cleanupServer) *teardownv1alpha1.ClusterTeardownPolicy {
	t.Helper()
	cluster := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key, Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", app))},
			Steps: []teardownv1alpha1.Step{hook.step("platform")},
		},
	}
	create(t, cluster)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cluster) })
	return cluster
}

// succeedsOnce answers InProgress until flag is set, then Success.
func succeedsOnce(flag *atomic.Bool) func(webhookRequest) answer {
	return func(webhookRequest) answer {
		if flag.Load() {
			return success
		}
		return inProgress
	}
}

func mustBeReady(t *testing.T, pol client.Object) {
	t.Helper()
	if cond := readyOf(t, pol, 30*time.Second); cond.Status != metav1.ConditionTrue {
		t.Fatalf("%s not Ready: %s: %s", pol.GetName(), cond.Reason, cond.Message)
	}
}

func deleteNow(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Delete(context.Background(), obj); err != nil {
		t.Fatalf("deleting %s: %v", obj.GetName(), err)
	}
}

// TestTenantCannotUnserveAClusterPolicy (issue 16, family 2): a tenant's
// TeardownPolicy, older than a ClusterTeardownPolicy and naming its key,
// does not make the cluster policy FinalizerConflict: a cluster policy
// outranks every TeardownPolicy, whose claim reaches only its namespace. The
// cluster policy attaches and cleans up in the tenant's namespace and
// elsewhere; the tenant's policy is not served. A tenant cannot name a key
// in Teardown's own domain other than its default, nor unserve the cluster
// policy by declaring its key on an object of its own. Negative control: a
// TeardownPolicy's own default key is served.
func TestTenantCannotUnserveAClusterPolicy(t *testing.T) {
	testenv.SkipShort(t)
	const key = "platform.example.com/guard"
	tenant, other := newNamespace(t), newNamespace(t)
	clusterHook := newCleanupServer(t, func(webhookRequest) answer { return success })
	tenantHook := newCleanupServer(t, func(webhookRequest) answer { return success })
	startController(t, "controller")

	older := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "squatter"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key, Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", "guarded"))},
			Steps: []teardownv1alpha1.Step{tenantHook.step("tenant")},
		},
	}
	create(t, older)
	mustBeReady(t, older)
	// The tenant also declares the key on an object the cluster policy
	// does not select.
	declared := configMap(tenant, "declared", labels("app", "unselected"), key)
	create(t, declared)
	t.Cleanup(func() {
		_ = k8s.Patch(context.Background(), declared, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has second resolution: be strictly older

	cluster := clusterWebhookPolicy(t, key, "guarded", clusterHook)
	mustBeReady(t, cluster)
	if cond := readyOf(t, older, 30*time.Second); cond.Reason != teardownv1alpha1.FinalizerConflictReason {
		testenv.Eventually(t, 30*time.Second, "the tenant's policy to yield", func(context.Context) (bool, error) {
			return readyOf(t, older, time.Second).Reason == teardownv1alpha1.FinalizerConflictReason, nil
		})
	}

	for _, ns := range []string{tenant, other} {
		cm := configMap(ns, "guarded", labels("app", "guarded"))
		create(t, cm)
		testenv.Eventually(t, 30*time.Second, ns+"/guarded to carry "+key, func(ctx context.Context) (bool, error) { return carries(ctx, cm, key) })
		deleteNow(t, cm)
		testenv.Eventually(t, 30*time.Second, ns+"/guarded to go", testenv.Gone(k8s, cm))
		if _, ok := clusterHook.succeeded(cm.UID); !ok {
			t.Errorf("%s/guarded went without the cluster policy's cleanup", ns)
		}
		if n := tenantHook.callsFor(cm.UID); n > 0 {
			t.Errorf("the tenant's webhook was called %d times for %s/guarded", n, ns)
		}
	}

	for _, tc := range []struct {
		name, key string
		refused   bool
	}{
		{"a cluster policy's default key", "teardown.dev/" + cluster.Name, true},
		{"another namespace's default key", other + ".teardown.dev/x", true},
		{"the policies' own finalizer", "teardown.dev/release-guarded-objects", true},
		{"its own default key (negative control)", tenant + ".teardown.dev/own", false},
	} {
		pol := &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "own"},
			Spec: teardownv1alpha1.TeardownPolicySpec{
				Finalizer: tc.key, Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", "mine"))},
			},
		}
		if !tc.refused {
			pol.Spec.Finalizer = "" // the default
		}
		create(t, pol)
		cond := readyOf(t, pol, 30*time.Second)
		if got := cond.Status != metav1.ConditionTrue; got != tc.refused {
			t.Errorf("%s: Ready=%s %s: %s", tc.name, cond.Status, cond.Reason, cond.Message)
		}
		deleteNow(t, pol)
		testenv.Eventually(t, 30*time.Second, "policy own to go", testenv.Gone(k8s, pol))
	}
}

// TestTeardownFinishesUnderThePolicyThatStartedIt (issue 16, family 4): two
// TeardownPolicies share a key; the older, A, owns it. A teardown starts
// under A (its webhook answers InProgress), then A renames its key. The
// retired key stays A's claim while an object carries it, and the teardown
// A started finishes under A's steps: B never becomes Ready on it meanwhile,
// B's webhook is never called for the object, and the object goes only
// after A's webhook said Success. A live object is handed over once, not
// flapping between the two.
func TestTeardownFinishesUnderThePolicyThatStartedIt(t *testing.T) {
	testenv.SkipShort(t)
	const key, renamed = "example.com/shared", "example.com/renamed"
	ns := newNamespace(t)
	var aSucceeds atomic.Bool
	hookA := newCleanupServer(t, func(webhookRequest) answer {
		if aSucceeds.Load() {
			return success
		}
		return inProgress
	})
	hookB := newCleanupServer(t, func(webhookRequest) answer { return success })
	startController(t, "controller")
	newPolicy := func(name string, hook *cleanupServer) *teardownv1alpha1.TeardownPolicy {
		pol := webhookPolicy(ns, name, key, "guarded", hook)
		create(t, pol)
		return pol
	}
	a := newPolicy("a", hookA)
	mustBeReady(t, a)
	time.Sleep(1100 * time.Millisecond)
	b := newPolicy("b", hookB)
	if cond := readyOf(t, b, 30*time.Second); cond.Status == metav1.ConditionTrue {
		t.Fatalf("b is Ready beside a: %s", cond.Message)
	}
	cms := guardedConfigMaps(t, ns, key, 2)
	dying, live := cms[0], cms[1]
	deleteNow(t, dying)
	testenv.Eventually(t, 30*time.Second, "a's cleanup to start", func(context.Context) (bool, error) {
		return hookA.callsFor(dying.UID) > 0, nil
	})

	// Count the live object's changes of key from here on.
	var flips atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		had := true
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			has, err := carries(context.Background(), live, key)
			if err == nil && has != had {
				flips.Add(1)
				had = has
			}
		}
	}()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"finalizer": renamed}})
	if err := k8s.Patch(context.Background(), a, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	stillHeld(t, 8*time.Second, "a's webhook never answered Success", dying)
	if n := hookB.callsFor(dying.UID); n > 0 {
		t.Fatalf("b's webhook was called %d times for a teardown a started", n)
	}
	aSucceeds.Store(true)
	testenv.Eventually(t, 30*time.Second, "the object to go after a's cleanup", testenv.Gone(k8s, dying))
	if _, ok := hookA.succeeded(dying.UID); !ok {
		t.Error("the object went without a's Success")
	}
	if n := hookB.callsFor(dying.UID); n > 0 {
		t.Errorf("b's webhook was called %d times for a teardown a started", n)
	}
	// Once no object carries the retired key, b owns it (within two
	// --status-interval: a prunes its retired key, then b checks again) and
	// guards the live object: one handover, not a flapping guard.
	testenv.Eventually(t, 60*time.Second, "b to own the key once a's retired key is gone", func(context.Context) (bool, error) {
		return readyOf(t, b, time.Second).Status == metav1.ConditionTrue, nil
	})
	testenv.Eventually(t, 30*time.Second, "the live object to carry the key under b", func(ctx context.Context) (bool, error) { return carries(ctx, live, key) })
	time.Sleep(3 * time.Second)
	close(stop)
	<-done
	if n := flips.Load(); n > 2 {
		t.Errorf("the live object's key changed %d times in the handover; want at most 2 (released by a, attached by b)", n)
	}
}

// TestRecordsWrittenAtCreateProveNothing (issue 16, family 5): a tenant
// creates, in a namespace a ClusterTeardownPolicy's namespaceSelector
// excludes, a ConfigMap that carries the policy's key and every record
// Teardown writes (progress, attached, a step record naming the policy),
// then deletes it. None of the records was written for this object (its
// UID did not exist yet), so the policy does nothing: no webhook call, and
// the key stays. Negative control: the same ConfigMap in a selected
// namespace is cleaned up and goes.
func TestRecordsWrittenAtCreateProveNothing(t *testing.T) {
	testenv.SkipShort(t)
	const key = "platform.example.com/records"
	excluded := newNamespace(t)
	hook := newCleanupServer(t, func(webhookRequest) answer { return success })
	c := startController(t, "controller")
	pol, selected := platformPolicy(t, key, hook)
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	mustBeReady(t, pol)
	got := &teardownv1alpha1.ClusterTeardownPolicy{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pol), got); err != nil {
		t.Fatal(err)
	}
	forged := func(ns string) *corev1.ConfigMap {
		cm := configMap(ns, "forged", labels("app", "guarded"), key)
		stepRecord, _ := json.Marshal(map[string]any{"object": "00000000-0000-0000-0000-000000000000", "policy": got.UID,
			"fingerprint": "x", "step": 0, "name": "platform", "since": time.Now().UTC().Format(time.RFC3339)})
		cm.Annotations = map[string]string{
			finalizer.ProgressAnnotation(key): "{}",
			finalizer.AttachedAnnotation(key): "true",
			steps.StateAnnotation(key):        string(stepRecord),
		}
		create(t, cm)
		t.Cleanup(func() {
			_ = k8s.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		})
		deleteNow(t, cm)
		return cm
	}
	// The controller is down while the tenant creates and deletes them, so
	// it first sees each already being deleted: a live object that claims
	// an attachment is released at once (that lets nothing go) and would
	// not test the records.
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	outside := forged(excluded)
	inside := forged(selected)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the selected ConfigMap to go after its cleanup (negative control)", testenv.Gone(k8s, inside))
	if _, ok := hook.succeeded(inside.UID); !ok {
		t.Error("the selected ConfigMap went without its cleanup")
	}
	time.Sleep(3 * time.Second)
	if n := hook.callsFor(outside.UID); n > 0 {
		t.Errorf("the policy called its webhook %d times for a ConfigMap outside its namespaceSelector, on records written at CREATE", n)
	}
	if ok, err := carries(context.Background(), outside, key); err != nil || !ok {
		t.Errorf("the key was removed from a ConfigMap outside the policy's selectors (carries=%v, err=%v)", ok, err)
	}
}

// TestSameSecondPoliciesDoNotTradeAKey (issue 16, family 4, the variant
// without an edit): two TeardownPolicies on one key created within the same
// second, z-… first. creationTimestamp has second resolution, so age cannot
// tell them apart, and the name would hand the key to the younger a-…. The
// one in force keeps it: a-… is FinalizerConflict, and a teardown under
// z-… is never touched by a-…'s steps.
func TestSameSecondPoliciesDoNotTradeAKey(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/same-second"
	ns := newNamespace(t)
	hookZ := newCleanupServer(t, func(webhookRequest) answer { return inProgress })
	hookA := newCleanupServer(t, func(webhookRequest) answer { return success })
	startController(t, "controller")
	newPolicy := func(name string, hook *cleanupServer) *teardownv1alpha1.TeardownPolicy {
		pol := webhookPolicy(ns, name, key, "guarded", hook)
		create(t, pol)
		return pol
	}
	var z, a *teardownv1alpha1.TeardownPolicy
	for attempt := range 8 {
		// Start just after a second begins, so that z is in force before
		// the next one.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		z = newPolicy("z-first-"+string(rune('0'+attempt)), hookZ)
		testenv.Eventually(t, 10*time.Second, "z to be in force", func(context.Context) (bool, error) {
			return readyOf(t, z, time.Second).Status == metav1.ConditionTrue, nil
		})
		a = newPolicy("a-second-"+string(rune('0'+attempt)), hookA)
		if z.CreationTimestamp.Equal(&a.CreationTimestamp) {
			break
		}
		deleteNow(t, a)
		deleteNow(t, z)
		a = nil
	}
	if a == nil {
		t.Fatal("harness: could not create the two policies within one second")
	}
	if cond := readyOf(t, a, 30*time.Second); cond.Reason != teardownv1alpha1.FinalizerConflictReason || !strings.Contains(cond.Message, "in force") {
		t.Fatalf("%s: Ready=%s %s: %s; want FinalizerConflict, z being in force", a.Name, cond.Status, cond.Reason, cond.Message)
	}
	cm := guardedConfigMaps(t, ns, key, 1)[0]
	deleteNow(t, cm)
	testenv.Eventually(t, 30*time.Second, "z's cleanup to start", func(context.Context) (bool, error) { return hookZ.callsFor(cm.UID) > 0, nil })
	stillHeld(t, 5*time.Second, "z's webhook never answered Success", cm)
	if n := hookA.callsFor(cm.UID); n > 0 {
		t.Errorf("a's webhook was called %d times for a teardown under z", n)
	}
	if cond := readyOf(t, z, 10*time.Second); cond.Status != metav1.ConditionTrue {
		t.Errorf("z lost its key: %s: %s", cond.Reason, cond.Message)
	}
}

// TestTenantKeyElsewhereDoesNotUnservePolicy (issue 16, found by TestModel
// seeds 20 to 22): a policy in force starts a teardown; a tenant then
// declares the policy's key on another object of the namespace, one the
// policy does not select. That is no evidence that the key is another
// controller's (the policy had it first), so the policy stays in force,
// across a controller restart too, and the teardown it started finishes;
// the tenant's object keeps its key.
func TestTenantKeyElsewhereDoesNotUnservePolicy(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/first"
	ns := newNamespace(t)
	var succeed atomic.Bool
	hook := newCleanupServer(t, succeedsOnce(&succeed))
	c := startController(t, "controller", "--status-interval=1s")
	pol := webhookPolicy(ns, "first", key, "guarded", hook)
	create(t, pol)
	mustBeReady(t, pol)
	cm := guardedConfigMaps(t, ns, key, 1)[0]
	deleteNow(t, cm)
	testenv.Eventually(t, 30*time.Second, "the cleanup to start", func(context.Context) (bool, error) { return hook.callsFor(cm.UID) > 0, nil })

	declared := configMap(ns, "declared", labels("app", "unselected"), key)
	create(t, declared)
	t.Cleanup(func() {
		_ = k8s.Patch(context.Background(), declared, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	time.Sleep(3 * time.Second) // three --status-interval: each reconcile checks the policy again
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	calls := hook.callsFor(cm.UID)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the restarted controller to go on with the cleanup", func(context.Context) (bool, error) {
		return hook.callsFor(cm.UID) > calls, nil
	})
	if cond := readyOf(t, pol, 10*time.Second); cond.Status != metav1.ConditionTrue {
		t.Errorf("the policy lost its key to a tenant's declaration elsewhere: %s: %s", cond.Reason, cond.Message)
	}
	succeed.Store(true)
	testenv.Eventually(t, 30*time.Second, "the object to go after its cleanup", testenv.Gone(k8s, cm))
	if ok, err := carries(context.Background(), declared, key); err != nil || !ok {
		t.Errorf("the tenant's declared key was removed from an object the policy does not select (carries=%v, err=%v)", ok, err)
	}
}

// TestAnotherPolicysAttachmentIsNoProof (issue 16, found by TestModel seeds
// 20, 21 and 24): a tenant's TeardownPolicy attaches its key to an object.
// While the controller is down, the object is deleted and a
// ClusterTeardownPolicy with the same key, selecting other objects, is
// created: once the controller is back, the cluster policy owns the key.
// Teardown's attached record on the object is bound to it and names the
// policy that attached it, so the cluster policy, which never selected it,
// never calls its webhook for it; the tenant's policy, which guarded it,
// finishes its teardown.
func TestAnotherPolicysAttachmentIsNoProof(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/attached-by"
	ns := newNamespace(t)
	var tenantSucceeds atomic.Bool
	tenantHook := newCleanupServer(t, succeedsOnce(&tenantSucceeds))
	clusterHook := newCleanupServer(t, func(webhookRequest) answer { return success })
	c := startController(t, "controller")
	tenant := webhookPolicy(ns, "tenant", key, "db", tenantHook)
	create(t, tenant)
	mustBeReady(t, tenant)
	cm := configMap(ns, "db", labels("app", "db"))
	create(t, cm)
	testenv.Eventually(t, 30*time.Second, "the tenant's policy to attach its key", func(ctx context.Context) (bool, error) { return carries(ctx, cm, key) })

	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	deleteNow(t, cm)
	cluster := clusterWebhookPolicy(t, key, "web", clusterHook)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	mustBeReady(t, cluster)
	testenv.Eventually(t, 30*time.Second, "the tenant's policy to yield", func(context.Context) (bool, error) {
		return readyOf(t, tenant, time.Second).Reason == teardownv1alpha1.FinalizerConflictReason, nil
	})
	testenv.Eventually(t, 30*time.Second, "the tenant's policy to go on with the cleanup it owes", func(context.Context) (bool, error) {
		return tenantHook.callsFor(cm.UID) > 0, nil
	})
	stillHeld(t, 3*time.Second, "the tenant's webhook never answered Success", cm)
	if n := clusterHook.callsFor(cm.UID); n > 0 {
		t.Fatalf("the cluster policy called its webhook %d times for an object it never selected, which another policy attached", n)
	}
	tenantSucceeds.Store(true)
	testenv.Eventually(t, 30*time.Second, "the object to go after the tenant's cleanup", testenv.Gone(k8s, cm))
	if _, ok := tenantHook.succeeded(cm.UID); !ok {
		t.Error("the object went without the tenant's cleanup")
	}
	if n := clusterHook.callsFor(cm.UID); n > 0 {
		t.Errorf("the cluster policy called its webhook %d times for it", n)
	}
}

// platformPolicy is a ClusterTeardownPolicy named after the test that
// guards ConfigMaps labelled app=guarded, with one webhook step
// ("platform") of hook, in the namespaces labelled team=platform; it
// returns the policy (not created) and a new namespace it selects.
func platformPolicy(t *testing.T, key string, hook *cleanupServer) (*teardownv1alpha1.ClusterTeardownPolicy, string) {
	t.Helper()
	selected := newNamespace(t)
	nsObj := &corev1.Namespace{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: selected}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{"team": "platform"}
	if err := k8s.Update(t.Context(), nsObj); err != nil {
		t.Fatal(err)
	}
	return &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key,
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
				Selector:          &metav1.LabelSelector{MatchLabels: labels("app", "guarded")},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels("team", "platform")}}},
			Steps: []teardownv1alpha1.Step{hook.step("platform")},
		},
	}, selected
}
