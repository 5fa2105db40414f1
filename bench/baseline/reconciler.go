/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package baseline is the finalizer pattern that the kubebuilder book
// ("Using Finalizers") and the operator-sdk tutorials teach, written out as
// faithfully as a benchmark allows: a controller-runtime reconciler over a
// full-object cache of ConfigMaps that adds its finalizer with
// controllerutil.AddFinalizer + r.Update and removes it with
// controllerutil.RemoveFinalizer + r.Update. It is what a user writes by
// hand instead of using Teardown; the benchmark measures Teardown against
// it.
package baseline

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ConfigMapReconciler guards the ConfigMaps that Selector matches with
// FinalizerName.
type ConfigMapReconciler struct {
	client.Client
	// FinalizerName is the finalizer the reconciler owns.
	FinalizerName string
	// Selector picks the ConfigMaps it guards.
	Selector labels.Selector
	// Cleanup is the external cleanup run before the finalizer is removed
	// (the book's deleteExternalResources); nil does nothing.
	Cleanup func(ctx context.Context, cm *corev1.ConfigMap) error
	// Workers is MaxConcurrentReconciles; 0 keeps controller-runtime's
	// default of 1, as kubebuilder generates it.
	Workers int
}

// Reconcile is the book's finalizer example with a ConfigMap in place of the
// CronJob.
func (r *ConfigMapReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, req.NamespacedName, cm); err != nil {
		// We'll ignore not-found errors, since they can't be fixed by an
		// immediate requeue.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// examine DeletionTimestamp to determine if object is under deletion
	if cm.ObjectMeta.DeletionTimestamp.IsZero() {
		// The object is not being deleted, so if it does not have our
		// finalizer, then lets add the finalizer and update the object.
		if !controllerutil.ContainsFinalizer(cm, r.FinalizerName) {
			controllerutil.AddFinalizer(cm, r.FinalizerName)
			if err := r.Update(ctx, cm); err != nil {
				return ctrl.Result{}, err
			}
		}
	} else {
		// The object is being deleted
		if controllerutil.ContainsFinalizer(cm, r.FinalizerName) {
			// our finalizer is present, so lets handle any external dependency
			if err := r.deleteExternalResources(ctx, cm); err != nil {
				// if fail to delete the external dependency here, return with
				// error so that it can be retried.
				return ctrl.Result{}, err
			}

			// remove our finalizer from the list and update it.
			controllerutil.RemoveFinalizer(cm, r.FinalizerName)
			if err := r.Update(ctx, cm); err != nil {
				return ctrl.Result{}, err
			}
		}

		// Stop reconciliation as the item is being deleted
		return ctrl.Result{}, nil
	}

	// Your reconcile logic
	return ctrl.Result{}, nil
}

func (r *ConfigMapReconciler) deleteExternalResources(ctx context.Context, cm *corev1.ConfigMap) error {
	if r.Cleanup == nil {
		return nil
	}
	return r.Cleanup(ctx, cm)
}

// SetupWithManager watches ConfigMaps through the manager's cache, which
// holds them whole, and only enqueues the ones Selector matches.
func (r *ConfigMapReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("configmap").
		For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			return r.Selector.Matches(labels.Set(obj.GetLabels()))
		})))
	if r.Workers > 0 {
		b = b.WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers})
	}
	return b.Complete(r)
}
