/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package waits_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// eventBound is how soon after its last dependency goes a target must be
// released with event-driven waits: far below the 2 s poll. Polling, the
// same scenario takes at least pollBound (the dependency goes right after
// the step's first check, so the next check is about 2 s away).
const (
	eventBound = time.Second
	pollBound  = time.Second
)

// guard creates a ConfigMap the policy guards and waits until it carries
// the policy's key.
func guard(t *testing.T, pol *teardownv1alpha1.ClusterTeardownPolicy, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"waits-test": pol.Name}}}
	create(t, cm)
	testenv.Eventually(t, 30*time.Second, "the target to be guarded", func(ctx context.Context) (bool, error) {
		got := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			return false, err
		}
		for _, f := range got.Finalizers {
			if f == pol.Spec.Finalizer {
				return true, nil
			}
		}
		return false, nil
	})
	return cm
}

// deletePending deletes the target and waits until its cleanup has run once
// and is pending (its progress record is there).
func deletePending(t *testing.T, pol *teardownv1alpha1.ClusterTeardownPolicy, cm *corev1.ConfigMap) {
	t.Helper()
	if err := k8s.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the target's cleanup to be pending", func(ctx context.Context) (bool, error) {
		got := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			return false, err
		}
		_, ok := got.Annotations[finalizer.ProgressAnnotation(pol.Spec.Finalizer)]
		return ok, nil
	})
}

// releasedAfter runs act (the last dependency goes) and returns how long
// the target then took to be gone, read every 10 ms.
func releasedAfter(t *testing.T, cm *corev1.ConfigMap, act func()) time.Duration {
	t.Helper()
	start := time.Now()
	act()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return time.Since(start)
		}
		if ctx.Err() != nil {
			t.Fatalf("target %s not released within 30s of its last dependency going", cm.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func deleteNow(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8s.Delete(t.Context(), o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting %s: %v", o.GetName(), err)
		}
	}
}

// TestReleaseFollowsTheLastDependency tears down a target whose wait step
// waits on pods, and one whose delete step waits for what it deleted to be
// gone: with event-driven waits the target goes well within a second of
// its last dependency; with --event-driven-waits=false, the poll makes it
// take at least a second (about 2 s) in the same scenario.
func TestReleaseFollowsTheLastDependency(t *testing.T) {
	testenv.SkipShort(t)
	for _, mode := range []struct {
		name        string
		eventDriven bool
	}{{"event-driven", true}, {"polling", false}} {
		t.Run(mode.name, func(t *testing.T) {
			c := startController(t, mode.eventDriven)
			ns := testenv.NewNamespace(t, k8s)
			check := func(what string, took time.Duration) {
				t.Helper()
				t.Logf("%s, %s: released %s after the last dependency went", mode.name, what, took.Round(time.Millisecond))
				if mode.eventDriven && took >= eventBound {
					t.Errorf("%s: released %s after the last dependency went; want < %s with event-driven waits", what, took, eventBound)
				}
				if !mode.eventDriven && took < pollBound {
					t.Errorf("%s: released %s after the last dependency went while polling; want >= %s (the 2 s poll)", what, took, pollBound)
				}
			}

			waitPol := clusterPolicy(t, "pods-"+mode.name, teardownv1alpha1.Step{Name: "users-gone", Wait: &teardownv1alpha1.WaitAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod", Selector: selector("app", "user")}},
			}})
			users := []*corev1.Pod{pod(ns, "user-1", map[string]string{"app": "user"}), pod(ns, "user-2", map[string]string{"app": "user"})}
			for _, p := range users {
				create(t, p)
			}
			target := guard(t, waitPol, ns, "served-by-pods")
			deletePending(t, waitPol, target)
			check("wait step on pods", releasedAfter(t, target, func() { deleteNow(t, users[0], users[1]) }))

			deletePol := clusterPolicy(t, "delete-"+mode.name, teardownv1alpha1.Step{Name: "deps", Delete: &teardownv1alpha1.DeleteAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "dep")}},
			}})
			dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dep", Labels: map[string]string{"app": "dep"},
				Finalizers: []string{"waits.teardown.dev/hold"}}}
			create(t, dep)
			target = guard(t, deletePol, ns, "deletes-deps")
			deletePending(t, deletePol, target)
			testenv.Eventually(t, 10*time.Second, "the delete step to delete the dependency", func(ctx context.Context) (bool, error) {
				got := &corev1.ConfigMap{}
				err := k8s.Get(ctx, client.ObjectKeyFromObject(dep), got)
				return err == nil && got.DeletionTimestamp != nil, client.IgnoreNotFound(err)
			})
			check("delete step", releasedAfter(t, target, func() {
				patch := []byte(`{"metadata":{"finalizers":null}}`)
				if err := k8s.Patch(t.Context(), dep, client.RawPatch(types.MergePatchType, patch)); err != nil {
					t.Fatal(err)
				}
			}))

			if mode.eventDriven {
				testenv.Eventually(t, 10*time.Second, "no registration left once the targets are gone", func(ctx context.Context) (bool, error) {
					v, err := c.metric(ctx, "teardown_wait_registered_targets", nil)
					return v == 0, err
				})
				if v := c.mustMetric(t, "teardown_wait_wakes_total", map[string]string{"cause": "event"}); v < 2 {
					t.Errorf("teardown_wait_wakes_total{cause=event} = %v, want at least the 2 releases", v)
				}
			}
		})
	}
}

// TestUnrelatedChangesDoNotWake: a pod that the wait step's selector does
// not select, or in another namespace, comes, changes and goes; the
// waiting target is not woken (the controller's wake counter does not
// move), then its own dependency goes and it is.
func TestUnrelatedChangesDoNotWake(t *testing.T) {
	testenv.SkipShort(t)
	c := startController(t, true)
	ns := testenv.NewNamespace(t, k8s)
	other := testenv.NewNamespace(t, k8s)
	pol := clusterPolicy(t, "unrelated", teardownv1alpha1.Step{Name: "users-gone", Wait: &teardownv1alpha1.WaitAction{
		Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod", Selector: selector("app", "user")}},
	}})
	user := pod(ns, "user", map[string]string{"app": "user"})
	create(t, user)
	target := guard(t, pol, ns, "target")
	deletePending(t, pol, target)
	// The step's first run started the watch of pods and, not covered yet,
	// was timed like a poll: once the watch runs, let that timed run pass,
	// so the step waits on its safety net alone.
	testenv.Eventually(t, 30*time.Second, "pods to be watched", func(ctx context.Context) (bool, error) {
		v, err := c.metric(ctx, "teardown_wait_watched_kinds", nil)
		return v >= 1, err
	})
	time.Sleep(2500 * time.Millisecond)
	before := c.mustMetric(t, "teardown_wait_wakes_total", map[string]string{"cause": "event"})

	stranger := pod(ns, "stranger", map[string]string{"app": "other"})
	create(t, stranger)
	if err := k8s.Patch(t.Context(), stranger, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"x"}}}`))); err != nil {
		t.Fatal(err)
	}
	elsewhere := pod(other, "user", map[string]string{"app": "user"})
	create(t, elsewhere)
	deleteNow(t, stranger, elsewhere)
	time.Sleep(1500 * time.Millisecond) // far more than an event takes
	if after := c.mustMetric(t, "teardown_wait_wakes_total", map[string]string{"cause": "event"}); after != before {
		t.Errorf("teardown_wait_wakes_total{cause=event} went from %v to %v on pods the step does not select", before, after)
	}

	took := releasedAfter(t, target, func() { deleteNow(t, user) })
	t.Logf("released %s after its own dependency went", took.Round(time.Millisecond))
	if took >= eventBound {
		t.Errorf("released %s after its dependency went; want < %s", took, eventBound)
	}
	if after := c.mustMetric(t, "teardown_wait_wakes_total", map[string]string{"cause": "event"}); after <= before {
		t.Errorf("teardown_wait_wakes_total{cause=event} did not move (%v) when the dependency went", after)
	}
}

// TestUnwatchableKindPolls: the controller may list Secrets but not watch
// them, so a wait on Secrets is not watched (the access check says so) and
// polls as before; the target is still released.
func TestUnwatchableKindPolls(t *testing.T) {
	testenv.SkipShort(t)
	c := startController(t, true)
	ns := testenv.NewNamespace(t, k8s)
	pol := clusterPolicy(t, "secrets", teardownv1alpha1.Step{Name: "secrets-gone", Wait: &teardownv1alpha1.WaitAction{
		Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret", Selector: selector("app", "user")}},
	}})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "user", Labels: map[string]string{"app": "user"}}}
	create(t, secret)
	target := guard(t, pol, ns, "target")
	deletePending(t, pol, target)
	took := releasedAfter(t, target, func() { deleteNow(t, secret) })
	t.Logf("released %s after the Secret went, by polling", took.Round(time.Millisecond))
	if !c.LogContains("may not list and watch the kind") {
		t.Errorf("the controller's log does not say it will not watch Secrets\n%s", c.LogTail(40))
	}
	if v := c.mustMetric(t, "teardown_wait_watched_kinds", nil); v != 0 {
		t.Errorf("teardown_wait_watched_kinds = %v, want 0: Secrets must not be watched", v)
	}
}
