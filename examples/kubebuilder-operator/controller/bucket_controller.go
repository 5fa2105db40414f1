/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package controller is a kubebuilder-style reconciler that keeps a bucket in
// an external system for every ConfigMap labelled example.com/bucket=true,
// and uses github.com/teardown-dev/teardown/pkg/finalizer so that deleting
// the ConfigMap deletes the bucket first.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/teardown-dev/teardown/examples/kubebuilder-operator/bucketapi"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

const (
	// BucketLabel marks the ConfigMaps that represent buckets, with the
	// value "true".
	BucketLabel = "example.com/bucket"
	// FinalizerName guards a bucket ConfigMap until its bucket is deleted.
	FinalizerName = "example.com/bucket-cleanup"
	// ControllerName names the controller in logs, metrics and Events.
	ControllerName = "bucket"
)

// BucketAPI is the external system. Both calls are idempotent.
type BucketAPI interface {
	// Create creates the bucket if it does not exist and reports whether
	// this call created it.
	Create(ctx context.Context, name string) (created bool, err error)
	// Delete deletes the bucket, or returns bucketapi.ErrNotFound if it does
	// not exist.
	Delete(ctx context.Context, name string) error
}

// BucketReconciler reconciles bucket ConfigMaps.
type BucketReconciler struct {
	client.Client
	// Buckets is the external bucket API.
	Buckets BucketAPI

	finalizers *finalizer.Finalizers
	// releaser writes only metadata.finalizers, for ConfigMaps that stop
	// being buckets.
	releaser finalizer.Client
}

// SetupWithManager registers the finalizer and the controller with mgr.
func (r *BucketReconciler) SetupWithManager(mgr ctrl.Manager) error {
	// Writes go through the reconciler's client; fresh reads after a
	// conflict go to the API server, not the cache.
	r.releaser = finalizer.ForClient(r.Client, mgr.GetAPIReader())
	r.finalizers = finalizer.New(r.releaser, finalizer.WithEventRecorder(mgr.GetEventRecorder(ControllerName)))
	if err := r.finalizers.Register(FinalizerName, finalizer.HandlerFunc(r.deleteBucket),
		finalizer.WithAttemptTimeout(30*time.Second)); err != nil {
		return fmt.Errorf("registering finalizer: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Buckets, and former buckets that still carry our finalizer: a
		// ConfigMap whose label was removed must be let go, not left stuck.
		For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			return isBucket(obj) || controllerutil.ContainsFinalizer(obj, FinalizerName)
		}))).
		Complete(r)
}

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile creates the bucket of a ConfigMap once the ConfigMap is guarded
// by the finalizer, and deletes it before the ConfigMap goes.
func (r *BucketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, req.NamespacedName, cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	if !isBucket(cm) {
		if !controllerutil.ContainsFinalizer(cm, FinalizerName) {
			return ctrl.Result{}, nil // never ours
		}
		if cm.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, r.release(ctx, cm)
		}
		// Being deleted: the finalizer's handler deletes the bucket below.
	}

	// Adds the finalizer (and stops: the next event shows it), or, when the
	// ConfigMap is being deleted, deletes the bucket and removes the
	// finalizer.
	out, err := r.finalizers.Reconcile(ctx, cm)
	if !out.Proceed {
		return out.Result(), err
	}

	// The finalizer is on the ConfigMap: a bucket created now is always
	// deleted again.
	name := BucketName(cm)
	created, err := r.Buckets.Create(ctx, name)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("creating bucket %s: %w", name, err)
	}
	if created {
		log.Info("Created bucket", "bucket", name)
	}
	return ctrl.Result{}, nil
}

// deleteBucket is the cleanup guarded by FinalizerName. A bucket that is
// already gone (404) is success, so running it again is harmless.
func (r *BucketReconciler) deleteBucket(ctx context.Context, obj client.Object) finalizer.Result {
	log := logf.FromContext(ctx)
	name := BucketName(obj)
	err := r.Buckets.Delete(ctx, name)
	switch {
	case errors.Is(err, bucketapi.ErrNotFound):
		log.V(1).Info("Bucket already gone", "bucket", name)
		return finalizer.Done()
	case err != nil:
		return finalizer.Retry(fmt.Errorf("deleting bucket %s: %w", name, err))
	}
	log.Info("Deleted bucket", "bucket", name)
	return finalizer.Done()
}

// release deletes the bucket of a ConfigMap that is no longer labelled as
// one, then removes the finalizer from it.
func (r *BucketReconciler) release(ctx context.Context, cm *corev1.ConfigMap) error {
	switch res := r.deleteBucket(ctx, cm); {
	case res.Err != nil:
		return fmt.Errorf("no longer a bucket: %w", res.Err)
	case res.State != finalizer.StateDone:
		return fmt.Errorf("no longer a bucket: deleting its bucket: %s", res)
	}
	if err := finalizer.Remove(ctx, r.releaser, cm, FinalizerName); err != nil {
		return err
	}
	logf.FromContext(ctx).Info("No longer a bucket; removed finalizer", "finalizer", FinalizerName)
	return nil
}

// BucketName is the external name of the bucket of obj.
func BucketName(obj client.Object) string { return obj.GetNamespace() + "." + obj.GetName() }

func isBucket(obj client.Object) bool { return obj.GetLabels()[BucketLabel] == "true" }
