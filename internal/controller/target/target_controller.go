/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package target reconciles the objects that policies guard, of any kind:
// one metadata-only watch per kind, shared by every policy, so memory does
// not grow with object size.
package target

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// Request names one target object of one kind.
type Request struct {
	GVK schema.GroupVersionKind
	types.NamespacedName
}

// Reconciler runs every matching policy's finalizer on a target object.
type Reconciler struct {
	Client client.Client
	Index  *policy.Index
	// Released counts, per policy, finalizers removed without cleanup since
	// the controller started; the policy status shows it.
	Released *Counters

	ctrl    controller.TypedController[Request]
	resync  chan event.TypedGenericEvent[*metav1.PartialObjectMetadata]
	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// SetupWithManager creates the controller; watches are added per kind by
// EnsureWatch as policies come.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	r.watched = map[schema.GroupVersionKind]bool{}
	r.resync = make(chan event.TypedGenericEvent[*metav1.PartialObjectMetadata], 1024)
	c, err := controller.NewTyped[Request]("target", mgr, controller.TypedOptions[Request]{
		Reconciler:              r,
		MaxConcurrentReconciles: workers,
	})
	if err != nil {
		return fmt.Errorf("creating the target controller: %w", err)
	}
	r.ctrl = c
	return c.Watch(source.TypedChannel(r.resync, handler.TypedEnqueueRequestsFromMapFunc(toRequest)))
}

func toRequest(_ context.Context, obj *metav1.PartialObjectMetadata) []Request {
	return []Request{{GVK: obj.GroupVersionKind(), NamespacedName: client.ObjectKeyFromObject(obj)}}
}

// Watch starts the metadata-only watch of gvk, once per kind.
func (r *Reconciler) Watch(mgr manager.Manager, gvk schema.GroupVersionKind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watched[gvk] {
		return nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	src := source.TypedKind(mgr.GetCache(), obj, handler.TypedEnqueueRequestsFromMapFunc(
		func(_ context.Context, o *metav1.PartialObjectMetadata) []Request {
			return []Request{{GVK: gvk, NamespacedName: client.ObjectKeyFromObject(o)}}
		}), relevantChange)
	if err := r.ctrl.Watch(src); err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	r.watched[gvk] = true
	return nil
}

// relevantChange passes the updates a policy acts on: labels (matching),
// finalizers and deletionTimestamp. Annotation-only updates, including the
// progress records the cleanup writes itself, would only wake reconciles
// early.
var relevantChange = predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
	UpdateFunc: func(e event.TypedUpdateEvent[*metav1.PartialObjectMetadata]) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return !maps.Equal(o.Labels, n.Labels) || !slices.Equal(o.Finalizers, n.Finalizers) ||
			!o.DeletionTimestamp.Equal(n.DeletionTimestamp)
	},
}

// Resync queues every cached object of gvk, so a new or changed policy is
// applied to objects that already exist.
func (r *Reconciler) Resync(ctx context.Context, gvk schema.GroupVersionKind, opts ...client.ListOption) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	// Only names are read from these: no need for a copy of every object.
	if err := r.Client.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		obj.SetGroupVersionKind(gvk)
		select {
		case r.resync <- event.TypedGenericEvent[*metav1.PartialObjectMetadata]{Object: obj}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Reconcile applies each policy of the object's kind: attach or run cleanup
// where it matches, release where it no longer does.
func (r *Reconciler) Reconcile(ctx context.Context, req Request) (reconcile.Result, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(req.GVK)
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	policies := r.Index.ForKind(req.GVK)
	if len(policies) == 0 {
		return reconcile.Result{}, nil
	}
	nsLabels, err := r.namespaceLabels(ctx, obj.Namespace, policies)
	if err != nil {
		return reconcile.Result{}, err
	}
	var result reconcile.Result
	var errs []error
	for _, pol := range policies {
		ctx := logf.IntoContext(ctx, logf.FromContext(ctx).WithValues("policy", pol.Ref.String()))
		if pol.Deleting || pol.Fin == nil {
			continue // the policy controller is releasing its objects
		}
		if !pol.Matches(req.GVK, obj, nsLabels) {
			if err := r.releaseUnmatched(ctx, pol, obj); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		out, err := pol.Fin.Reconcile(ctx, obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("policy %s: %w", pol.Ref, err))
		}
		if len(out.Released) > 0 {
			r.Released.Add(pol.Ref, len(out.Released))
		}
		if out.RequeueAfter > 0 && (result.RequeueAfter == 0 || out.RequeueAfter < result.RequeueAfter) {
			result.RequeueAfter = out.RequeueAfter
		}
	}
	return result, errors.Join(errs...)
}

// releaseUnmatched removes an automatically attached key from an object the
// policy no longer selects. A Declared key belongs to the object's author,
// not to the policy, and stays.
func (r *Reconciler) releaseUnmatched(ctx context.Context, pol *policy.Policy, obj *metav1.PartialObjectMetadata) error {
	if pol.Attach != teardownv1alpha1.AttachAutomatic || !slices.Contains(obj.Finalizers, pol.Key) {
		return nil
	}
	removed, err := pol.Fin.Release(ctx, obj, pol.Key, "unmatched", fmt.Sprintf("the object no longer matches %s", pol.Ref))
	if err != nil {
		return fmt.Errorf("releasing %s from %s: %w", pol.Key, klog.KObj(obj), err)
	}
	if removed {
		r.Released.Add(pol.Ref, 1)
	}
	return nil
}

// namespaceLabels reads the namespace's labels when a policy selects
// namespaces; nil otherwise.
func (r *Reconciler) namespaceLabels(ctx context.Context, ns string, policies []*policy.Policy) (labels.Set, error) {
	if ns == "" || !slices.ContainsFunc(policies, func(p *policy.Policy) bool {
		return slices.ContainsFunc(p.Targets, func(t policy.Target) bool { return t.NamespaceSelector != nil })
	}) {
		return nil, nil
	}
	nsObj := &metav1.PartialObjectMetadata{}
	nsObj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	return nsObj.Labels, nil
}

// Counters counts per policy.
type Counters struct{ m sync.Map }

// Add adds n to ref's count.
func (c *Counters) Add(ref policy.Ref, n int) {
	v, _ := c.m.LoadOrStore(ref, new(atomic.Int64))
	v.(*atomic.Int64).Add(int64(n))
}

// Get returns ref's count.
func (c *Counters) Get(ref policy.Ref) int64 {
	v, ok := c.m.Load(ref)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}
