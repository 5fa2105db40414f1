/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// restartNTimes restarts the controller n times, alternately with SIGKILL
// and with SIGTERM, and after each start waits until it has called the
// cleanup webhook for obj again (proof that the new process has resumed its
// teardown), or obj is gone, then lets it run for settle.
func restartNTimes(t *testing.T, c *procctl.Controller, n int, srv *cleanupServer, obj client.Object, settle time.Duration) {
	t.Helper()
	for i := range n {
		before := srv.callsFor(obj.GetUID())
		how := "SIGKILL"
		if i%2 == 0 {
			if err := c.Kill(); err != nil {
				t.Fatal(err)
			}
		} else {
			how = "SIGTERM"
			if err := c.Stop(15 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		gone := false
		resumed := poll(30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
			if _, exists, err := finalizersOf(ctx, obj); err == nil && !exists {
				gone = true
				return true, nil
			}
			return srv.callsFor(obj.GetUID()) > before, nil
		})
		if !resumed && !gone {
			t.Errorf("restart %d (%s): the controller did not call the cleanup webhook for %s again within 30s", i+1, how, obj.GetName())
		}
		time.Sleep(settle)
	}
}

// TestSharedKeyOwnershipSurvivesRestarts: two policies in one namespace
// name the same finalizer key with different selectors. The oldest owns the
// key and is the only one Ready; the other is Ready=False FinalizerConflict
// naming it. Through restarts (SIGKILL and SIGTERM) of the controller,
// ownership never flips, the owner's objects keep their key, and an object
// mid-cleanup goes only after its webhook answered Success.
func TestSharedKeyOwnershipSurvivesRestarts(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/shared"
	ns := newNamespace(t)
	var releaseMid atomic.Bool
	srv := newCleanupServer(t, func(req webhookRequest) answer {
		if req.Object.Name == "mid" && !releaseMid.Load() {
			return inProgress
		}
		return success
	})
	c := startController(t, "controller")

	owner := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key,
			Targets:   []teardownv1alpha1.Target{configMapTarget(labels("owner", "yes"))},
			Steps:     []teardownv1alpha1.Step{srv.step("cleanup")},
		},
	}
	create(t, owner)
	if cond := waitReady(t, owner, 30*time.Second); cond.Status != metav1.ConditionTrue {
		t.Fatalf("policy owner, alone with its key, is not Ready: %s: %s", cond.Reason, cond.Message)
	}
	// creationTimestamp has a resolution of one second: make the owner
	// strictly older.
	time.Sleep(1100 * time.Millisecond)
	second := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key,
			Targets:   []teardownv1alpha1.Target{configMapTarget(labels("second", "yes"))},
			Steps:     []teardownv1alpha1.Step{srv.step("cleanup")},
		},
	}
	create(t, second)
	cond := waitReady(t, second, 30*time.Second)
	if cond.Status != metav1.ConditionFalse || cond.Reason != teardownv1alpha1.FinalizerConflictReason || !strings.Contains(cond.Message, "owner") {
		t.Errorf("policy second, younger with the same key: Ready=%s %s: %q; want Ready=False %s naming policy owner",
			cond.Status, cond.Reason, cond.Message, teardownv1alpha1.FinalizerConflictReason)
	}

	onlyOwner := []*corev1.ConfigMap{
		configMap(ns, "only-owner-1", labels("owner", "yes")),
		configMap(ns, "only-owner-2", labels("owner", "yes")),
	}
	both := configMap(ns, "both", labels("owner", "yes", "second", "yes"))
	onlySecond := configMap(ns, "only-second", labels("second", "yes"))
	mid := configMap(ns, "mid", labels("owner", "yes"))
	guarded := append([]*corev1.ConfigMap{both, mid}, onlyOwner...)
	for _, cm := range append([]*corev1.ConfigMap{onlySecond}, guarded...) {
		create(t, cm)
	}
	for _, cm := range guarded {
		testenv.Eventually(t, 30*time.Second, cm.Name+" to carry "+key, func(ctx context.Context) (bool, error) {
			return carries(ctx, cm, key)
		})
	}
	if err := k8s.Delete(context.Background(), mid); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the cleanup webhook to be called for mid", func(context.Context) (bool, error) {
		return srv.callsFor(mid.UID) > 0, nil
	})

	m := startMonitor(100*time.Millisecond, func(ctx context.Context) []string {
		var vs []string
		if c, err := readyCondition(ctx, owner); err == nil && c != nil && c.Status != metav1.ConditionTrue {
			vs = append(vs, fmt.Sprintf("policy owner lost its key: Ready=%s %s: %s", c.Status, c.Reason, c.Message))
		}
		if c, err := readyCondition(ctx, second); err == nil && c != nil && c.Status == metav1.ConditionTrue {
			vs = append(vs, "policy second (the younger) became Ready: ownership of "+key+" flipped")
		}
		for _, cm := range append([]*corev1.ConfigMap{both}, onlyOwner...) {
			fins, exists, err := finalizersOf(ctx, cm)
			if err != nil {
				continue
			}
			if !exists {
				vs = append(vs, cm.Name+" (selected by the owner) is gone")
			} else if !contains(fins, key) {
				vs = append(vs, fmt.Sprintf("%s (selected by the owner) lost %s; finalizers %v", cm.Name, key, fins))
			}
		}
		fins, exists, err := finalizersOf(ctx, mid)
		if err == nil && !releaseMid.Load() {
			if _, ok := srv.succeeded(mid.UID); !ok {
				if !exists {
					vs = append(vs, "mid (mid-cleanup, webhook answering InProgress) was deleted before its cleanup succeeded")
				} else if !contains(fins, key) {
					vs = append(vs, fmt.Sprintf("mid (mid-cleanup) lost %s before its cleanup succeeded; finalizers %v", key, fins))
				}
			}
		}
		return vs
	})
	restartNTimes(t, c, 6, srv, mid, 2*time.Second)
	for _, v := range m.stop() {
		t.Errorf("%s", v)
	}

	releaseMid.Store(true)
	testenv.Eventually(t, 30*time.Second, "mid to go once its webhook answers Success", testenv.Gone(k8s, mid))
	if _, ok := srv.succeeded(mid.UID); !ok {
		t.Errorf("mid went without a Success from its cleanup webhook")
	}
	for _, cm := range append([]*corev1.ConfigMap{both}, onlyOwner...) {
		if ok, err := carries(context.Background(), cm, key); err != nil || !ok {
			t.Errorf("%s (selected by the owner) does not carry %s at the end (err %v)", cm.Name, key, err)
		}
	}
	if cond := waitReady(t, owner, 10*time.Second); cond.Status != metav1.ConditionTrue {
		t.Errorf("policy owner at the end: Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
	}
}

// TestForeignKeyIsNeverStripped: a TeardownPolicy names another
// controller's key with a selector that matches nothing, while ConfigMaps of
// its namespace carry that key, put there by the other operator, one of them
// being deleted. Teardown never removes that key: not while it runs, not
// after a restart; and the policy is reported not Ready.
func TestForeignKeyIsNeverStripped(t *testing.T) {
	testenv.SkipShort(t)
	const key = "example.com/other-operator"
	ns := newNamespace(t)
	srv := newCleanupServer(t, func(webhookRequest) answer { return success })
	foreign := []*corev1.ConfigMap{
		configMap(ns, "foreign-1", labels("app", "other"), key),
		configMap(ns, "foreign-2", labels("app", "other"), key),
		configMap(ns, "foreign-deleting", labels("app", "other"), key),
	}
	for _, cm := range foreign {
		create(t, cm)
	}
	deleting := foreign[2]
	if err := k8s.Delete(context.Background(), deleting); err != nil {
		t.Fatal(err)
	}
	c := startController(t, "controller")
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claims-other"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key,
			Targets:   []teardownv1alpha1.Target{configMapTarget(labels("matches", "nothing"))},
			Steps:     []teardownv1alpha1.Step{srv.step("cleanup")},
		},
	}
	create(t, pol)
	cond := waitReady(t, pol, 30*time.Second)
	t.Logf("policy claims-other, naming another operator's key: Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)

	m := startMonitor(100*time.Millisecond, func(ctx context.Context) []string {
		var vs []string
		for _, cm := range foreign {
			fins, exists, err := finalizersOf(ctx, cm)
			if err != nil {
				continue
			}
			if !exists {
				vs = append(vs, cm.Name+" is gone: Teardown removed "+key+", another operator's key")
			} else if !contains(fins, key) {
				vs = append(vs, fmt.Sprintf("%s lost %s, another operator's key; finalizers %v", cm.Name, key, fins))
			}
		}
		return vs
	})
	time.Sleep(5 * time.Second)
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second)
	if err := c.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second)
	for _, v := range m.stop() {
		t.Errorf("%s", v)
	}
	if n := srv.callsFor(deleting.UID); n > 0 {
		t.Logf("note: the cleanup webhook was called %d times for %s, which the policy does not select", n, deleting.Name)
	}
	// The contract: a policy naming a key another controller manages is
	// reported, not Ready, instead of acting.
	if cond := waitReady(t, pol, 10*time.Second); cond.Status == metav1.ConditionTrue {
		t.Errorf("policy claims-other is Ready=True (%s: %s) while objects it did not attach carry its key", cond.Reason, cond.Message)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
