/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package controller is a plain client-go controller (typed clientset, shared
// informer, rate-limited workqueue) that honours the finalizer
// my.custom/finalizer declared in a Service's manifest: while a guarded
// Service exists it keeps a DNS record for it, and when the Service is
// deleted it deregisters the record before letting the Service go.
//
// The finalizer protocol itself (guarded patches, progress annotation,
// Events) comes from github.com/teardown-dev/teardown/pkg/finalizer.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// FinalizerName is the key a Service declares in metadata.finalizers to have
// its DNS record deregistered before it is deleted.
const FinalizerName = "my.custom/finalizer"

// DefaultRecheckAfter is how long a pending deregistration waits before it is
// checked again.
const DefaultRecheckAfter = 2 * time.Second

// Options configure a Controller.
type Options struct {
	// RecheckAfter is how long to wait before checking a pending
	// deregistration again; DefaultRecheckAfter if zero.
	RecheckAfter time.Duration
	// EventRecorder receives Events about cleanups; none are written if nil.
	EventRecorder events.EventRecorder
}

// Controller keeps a DNS record for every Service that declares
// FinalizerName and deregisters it when the Service is deleted.
type Controller struct {
	lister     corelisters.ServiceLister
	synced     cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[cache.ObjectName]
	finalizers *finalizer.Finalizers
	registry   Registry
	recheck    time.Duration
}

// New returns a controller for the Services of services. dyn is used only to
// patch the Services' metadata (finalizers and the progress annotation).
// Start the informer's factory, then call Run.
func New(ctx context.Context, dyn dynamic.Interface, services coreinformers.ServiceInformer, registry Registry, opts Options) (*Controller, error) {
	c := &Controller{
		lister:   services.Lister(),
		synced:   services.Informer().HasSynced,
		registry: registry,
		recheck:  opts.RecheckAfter,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "services"},
		),
	}
	if c.recheck <= 0 {
		c.recheck = DefaultRecheckAfter
	}
	var fopts []finalizer.Option
	if opts.EventRecorder != nil {
		fopts = append(fopts, finalizer.WithEventRecorder(opts.EventRecorder))
	}
	c.finalizers = finalizer.New(finalizer.ForDynamic(dyn, corev1.SchemeGroupVersion.WithResource("services")), fopts...)
	// Declared: the controller never adds the key itself; only Services whose
	// manifest carries it are guarded, from the moment they are created.
	if err := c.finalizers.Register(FinalizerName, finalizer.HandlerFunc(c.deregister), finalizer.WithAttach(finalizer.AttachDeclared)); err != nil {
		return nil, fmt.Errorf("registering finalizer: %w", err)
	}

	// React to every state of a guarded Service, updates included: a delete
	// with a finalizer held is an update that sets deletionTimestamp. The
	// informer's delete event comes only after the finalizer is gone, too
	// late to do the cleanup the finalizer was holding the Service for.
	_, err := services.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(ctx, obj) },
		UpdateFunc: func(_, obj any) { c.enqueue(ctx, obj) },
	}, cache.HandlerOptions{Logger: ptr(klog.FromContext(ctx))})
	if err != nil {
		return nil, fmt.Errorf("adding the Service event handler: %w", err)
	}
	return c, nil
}

func ptr[T any](v T) *T { return &v }

// enqueue queues Services that carry the finalizer; the others are not ours.
func (c *Controller) enqueue(ctx context.Context, obj any) {
	svc, ok := obj.(*corev1.Service)
	if !ok || !slices.Contains(svc.Finalizers, FinalizerName) {
		return
	}
	key, err := cache.ObjectToName(svc)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Cannot queue Service")
		return
	}
	c.queue.Add(key)
}

// Run waits for the informer's cache and runs workers until ctx is
// cancelled; it returns once the queue is shut down and every worker has
// stopped.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "finalizer", FinalizerName)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		return errors.New("timed out waiting for the Service cache to sync")
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	<-ctx.Done()
	logger.Info("Stopping controller")
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextItem(ctx) {
	}
}

func (c *Controller) processNextItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	after, err := c.sync(ctx, key)
	switch {
	case ctx.Err() != nil:
		// Shutting down: whatever was cut short is retried by the next run.
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing Service; requeuing", "service", key)
		c.queue.AddRateLimited(key)
	case after > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, after)
	default:
		c.queue.Forget(key)
	}
	return true
}

// sync brings one Service along: the finalizer protocol first, then, for a
// Service that is not being deleted, its DNS record. It returns when to look
// at the Service again, if it must.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "service", key.String())
	ctx = klog.NewContext(ctx, logger)

	cached, err := c.lister.Services(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// The library refreshes the object it is given from its writes: never
	// hand it the cache's copy.
	svc := cached.DeepCopy()

	out, err := c.finalizers.Reconcile(ctx, svc)
	for _, name := range out.Removed {
		logger.Info("Removed finalizer", "finalizer", name)
	}
	if !out.Proceed {
		return out.RequeueAfter, err
	}

	if !slices.Contains(svc.Finalizers, FinalizerName) {
		return 0, nil
	}
	name := RecordName(svc)
	created, err := c.registry.Register(ctx, name, svc.Spec.ClusterIP)
	if err != nil {
		return 0, fmt.Errorf("registering DNS record %s: %w", name, err)
	}
	if created {
		logger.Info("Registered DNS record", "record", name, "target", svc.Spec.ClusterIP)
	}
	return 0, nil
}

// deregister is the cleanup guarded by FinalizerName. It is idempotent: a
// record already gone is success.
func (c *Controller) deregister(ctx context.Context, obj client.Object) finalizer.Result {
	name := recordName(obj.GetNamespace(), obj.GetName())
	gone, err := c.registry.Deregister(ctx, name)
	if err != nil {
		return finalizer.Retry(fmt.Errorf("deregistering DNS record %s: %w", name, err))
	}
	if !gone {
		return finalizer.Pending(c.recheck, fmt.Sprintf("waiting for DNS record %s to be deregistered", name))
	}
	klog.FromContext(ctx).Info("Deregistered DNS record", "record", name)
	return finalizer.Done()
}

// RecordName is the DNS name kept for svc.
func RecordName(svc *corev1.Service) string { return recordName(svc.Namespace, svc.Name) }

func recordName(namespace, name string) string {
	return name + "." + namespace + ".svc.example.test"
}
