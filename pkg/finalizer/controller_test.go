/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// guardLabel marks the ConfigMaps a test controller guards.
const guardLabel = "teardown.dev/test-guard"

// configMapGVK is what the metadata-only controllers watch.
var configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// runController runs, until ctx ends, a controller-runtime manager whose
// reconciler drives fin over metadata-only ConfigMaps in namespace ns that
// carry guardLabel. It is the shape pkg/finalizer recommends to controller
// authors, and it reads from a cache, so stale copies are part of every test.
func runController(ctx context.Context, cfg *rest.Config, ns string, register func(*finalizer.Finalizers) error) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultNamespaces:    map[string]cache.Config{ns: {}},
			DefaultLabelSelector: labels.SelectorFromSet(labels.Set{guardLabel: "true"}),
		},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	fin := finalizer.New(finalizer.ForClient(mgr.GetClient(), mgr.GetAPIReader()),
		finalizer.WithEventRecorder(mgr.GetEventRecorder("finalizer-test")))
	if err := register(fin); err != nil {
		return err
	}
	watched := &metav1.PartialObjectMetadata{}
	watched.SetGroupVersionKind(configMapGVK)
	err = ctrl.NewControllerManagedBy(mgr).
		Named(fmt.Sprintf("test-%s-%d", ns, time.Now().UnixNano())).
		For(watched).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4}).
		Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			obj := &metav1.PartialObjectMetadata{}
			obj.SetGroupVersionKind(configMapGVK)
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, obj); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			out, err := fin.Reconcile(ctx, obj)
			return out.Result(), err
		}))
	if err != nil {
		return fmt.Errorf("creating controller: %w", err)
	}
	return mgr.Start(ctx)
}

// startController runs a controller for the rest of the test.
func startController(t *testing.T, ns string, register func(*finalizer.Finalizers) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runController(ctx, cfg, ns, register) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
}

// guarded creates a ConfigMap the test controllers guard.
func guarded(t *testing.T, ns, name string, finalizers ...string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns, Finalizers: finalizers,
		Labels: map[string]string{guardLabel: "true"},
	}}
	if err := k8s.Create(t.Context(), cm); err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}

// hasFinalizers reports whether obj carries all of names.
func hasFinalizers(obj client.Object, names ...string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		got := obj.DeepCopyObject().(client.Object)
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		have := strings.Join(got.GetFinalizers(), ",")
		for _, n := range names {
			if !strings.Contains(have, n) {
				return false, nil
			}
		}
		return true, nil
	}
}

// deleteObject deletes obj, with propagation when given.
func deleteObject(t *testing.T, obj client.Object, opts ...client.DeleteOption) {
	t.Helper()
	if err := k8s.Delete(t.Context(), obj, opts...); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s: %v", obj.GetName(), err)
	}
}

// eventsFor returns the events.k8s.io Events about the object named name in ns
// with the given reason.
func eventsFor(ctx context.Context, ns, name, reason string) ([]eventsv1.Event, error) {
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out, nil
}

// waitForEvent waits for an Event with reason about name and returns its note.
func waitForEvent(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var note string
	testenv.Eventually(t, 20*time.Second, "a "+reason+" Event", func(ctx context.Context) (bool, error) {
		evs, err := eventsFor(ctx, ns, name, reason)
		if err != nil || len(evs) == 0 {
			return false, err
		}
		note = evs[0].Note
		return true, nil
	})
	return note
}
