/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package inuse knows which pods use which ServiceAccounts, Secrets,
// ConfigMaps and RBAC objects, for the unused step: a reference index over
// every pod, binding and ClusterRole of the cluster, kept small (only what
// a use needs) and started only when a policy with an unused step is
// served.
//
// It wakes the cleanups that wait on a use as soon as that use ends: a step
// that finds its target in use leaves a Waiter under each reference it
// waits on, and a change of a pod, binding or ClusterRole behind one of
// them wakes it (once: the next pending run registers again).
package inuse

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// ErrNotSynced says the index has not yet seen every pod and binding: no
// target may be called unused before it has.
var ErrNotSynced = errors.New("the controller's index of pods and bindings has not synced yet")

// Waiter is the cleanup of one target object waiting on a use to end.
type Waiter struct {
	GVK schema.GroupVersionKind
	Key types.NamespacedName
}

// Index names.
const (
	// usesIndex maps a pod key (serviceAccountKey, secretKey, configMapKey,
	// podsInPrefix+namespace) to the pods it names.
	usesIndex = "uses"
	// roleIndex maps a role key (roleKey) to the bindings that grant it.
	roleIndex = "role"
	// syncedKey is the wait key of cleanups waiting for the index to sync.
	syncedKey = "synced"
	// clusterRolesKey is the wait key of cleanups whose answer rests on
	// which ClusterRoles aggregate which: any ClusterRole's change or
	// deletion wakes them (ClusterRoles seldom change).
	clusterRolesKey = "clusterroles"
)

func secretKey(ns, name string) string    { return "Secret/" + ns + "/" + name }
func configMapKey(ns, name string) string { return "ConfigMap/" + ns + "/" + name }

// roleKey names a Role (ns set) or a ClusterRole.
func roleKey(kind, ns, name string) string {
	if kind == "ClusterRole" {
		return "role:ClusterRole/" + name
	}
	return "role:Role/" + ns + "/" + name
}

// bindingKey is the wait key of a binding's own changes.
func bindingKey(b *Binding) string { return "binding:" + b.Kind() + "/" + b.Namespace + "/" + b.Name }

// podKeys are the keys a pod is found under.
func podKeys(p *Pod) []string {
	keys := make([]string, 0, 2+len(p.Secrets)+len(p.ConfigMaps))
	keys = append(keys, serviceAccountKey(p.Namespace, p.ServiceAccount), podsInPrefix+p.Namespace)
	for _, s := range p.Secrets {
		keys = append(keys, secretKey(p.Namespace, s))
	}
	for _, c := range p.ConfigMaps {
		keys = append(keys, configMapKey(p.Namespace, c))
	}
	return keys
}

var podIndexers = cache.Indexers{usesIndex: func(obj any) ([]string, error) {
	p, ok := obj.(*Pod)
	if !ok {
		return nil, fmt.Errorf("not a pod record: %T", obj)
	}
	return podKeys(p), nil
}}

var bindingIndexers = cache.Indexers{roleIndex: func(obj any) ([]string, error) {
	b, ok := obj.(*Binding)
	if !ok {
		return nil, fmt.Errorf("not a binding record: %T", obj)
	}
	return []string{roleKey(b.RoleKind, b.Namespace, b.RoleName)}, nil
}}

// transform reduces what the informers receive to the records the index
// keeps, before anything is stored. It is idempotent, as client-go asks.
func transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return PodOf(o), nil
	case *rbacv1.RoleBinding:
		return BindingOf(o), nil
	case *rbacv1.ClusterRoleBinding:
		return ClusterBindingOf(o), nil
	case *rbacv1.ClusterRole:
		return ClusterRoleOf(o), nil
	}
	return obj, nil
}

// Index is the reference index. It is a manager Runnable that does nothing
// until Activate is called: a cluster with no policy that has an unused step
// pays for no watch.
//
// The informers are client-go's own (a SharedInformerFactory with a
// transform), not the manager's cache: that cache hands out typed objects
// (a *corev1.Pod) to every reader of the manager's client, so it can only
// strip fields from a full Pod struct (about a kilobyte even when empty),
// and anyone listing Pods through the client would read the stripped copies.
// Private informers keep the records small and out of everyone else's way.
type Index struct {
	// Log, when set, is where the index logs (a manager starts its
	// runnables with no logger in their context); otherwise the context's,
	// else klog's. The package logs through klog's contextual logging, not
	// controller-runtime's, so that kubectl teardown can use its lookup
	// without linking controller-runtime.
	Log klog.Logger

	config *rest.Config
	// wake queues a waiter's cleanup.
	wake func(context.Context, Waiter)

	mu        sync.Mutex
	ctx       context.Context // set by Start
	activated bool
	started   bool
	synced    atomic.Bool
	// stores are the informers' stores; nil until started.
	stores

	waitMu sync.Mutex
	// waiting maps a wait key to the waiters on it; registered is the
	// reverse, with each waiter's safety-net timer.
	waiting    map[string]map[Waiter]struct{}
	registered map[Waiter]*registration
}

// New returns an index that reads the cluster with config and calls wake
// for each waiter whose use may have ended.
func New(config *rest.Config, wake func(context.Context, Waiter)) *Index {
	return &Index{config: config, wake: wake, waiting: map[string]map[Waiter]struct{}{}, registered: map[Waiter]*registration{}}
}

// NeedLeaderElection: only the leader serves policies, so only it needs
// the index.
func (x *Index) NeedLeaderElection() bool { return true }

// Start runs the index until ctx ends; the informers start at the first
// Activate (or now, when one came before).
func (x *Index) Start(ctx context.Context) error {
	if x.Log.GetSink() != nil {
		ctx = klog.NewContext(ctx, x.Log)
	}
	x.mu.Lock()
	x.ctx = ctx
	var err error
	if x.activated {
		err = x.startLocked()
	}
	x.mu.Unlock()
	if err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Activate starts the informers, once. A policy with an unused step calls it
// when it is served, and the step itself when it runs.
func (x *Index) Activate() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.activated = true
	if x.ctx == nil || x.started {
		return
	}
	if err := x.startLocked(); err != nil {
		klog.FromContext(x.ctx).Error(err, "Could not start the index of pods and bindings; unused steps stay pending")
	}
}

func (x *Index) startLocked() error {
	if x.started {
		return nil
	}
	cfg := rest.CopyConfig(x.config)
	// Protobuf: pods are the largest objects most clusters list.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the client of the pod index: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(transform))
	pods := factory.Core().V1().Pods().Informer()
	rbs := factory.Rbac().V1().RoleBindings().Informer()
	crbs := factory.Rbac().V1().ClusterRoleBindings().Informer()
	crs := factory.Rbac().V1().ClusterRoles().Informer()
	if err := pods.AddIndexers(podIndexers); err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{rbs, crbs} {
		if err := inf.AddIndexers(bindingIndexers); err != nil {
			return err
		}
	}
	ctx := x.ctx
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) { x.podChanged(ctx, oldObj, newObj) },
		DeleteFunc: func(obj any) { x.podChanged(ctx, obj, nil) },
	}); err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{rbs, crbs} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { x.bindingChanged(ctx, nil, obj) },
			UpdateFunc: func(oldObj, newObj any) { x.bindingChanged(ctx, oldObj, newObj) },
			DeleteFunc: func(obj any) { x.bindingChanged(ctx, obj, nil) },
		}); err != nil {
			return err
		}
	}
	// A new ClusterRole only adds uses: no one to wake.
	if _, err := crs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) { x.clusterRoleChanged(ctx, oldObj, newObj) },
		DeleteFunc: func(obj any) { x.clusterRoleChanged(ctx, obj, nil) },
	}); err != nil {
		return err
	}
	x.stores = stores{pods: pods.GetIndexer(), roleBindings: rbs.GetIndexer(), clusterRoleBindings: crbs.GetIndexer(),
		clusterRoles: crs.GetIndexer()}
	x.started = true
	factory.Start(ctx.Done())
	go func() {
		for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return
			}
		}
		x.synced.Store(true)
		klog.FromContext(ctx).Info("The index of pods and bindings has synced", "pods", len(x.pods.ListKeys()))
		x.wakeKeys(ctx, syncedKey)
	}()
	return nil
}

// unknownState unwraps a deletion the informer learnt of late.
func unknownState(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

// podChanged wakes the waiters on what the old pod used when what it says
// about use changed, or when it is gone (newObj nil). A new pod frees
// nothing, so additions wake nobody.
func (x *Index) podChanged(ctx context.Context, oldObj, newObj any) {
	old, ok := unknownState(oldObj).(*Pod)
	if !ok {
		return
	}
	if cur, ok := newObj.(*Pod); ok && cur.equal(old) {
		return
	}
	x.wakeKeys(ctx, append(podKeys(old), allPods)...)
}

// bindingChanged wakes the waiters on a binding (its subjects changed, or it
// went) and on the role it grants.
func (x *Index) bindingChanged(ctx context.Context, oldObj, newObj any) {
	old, _ := unknownState(oldObj).(*Binding)
	cur, _ := unknownState(newObj).(*Binding)
	var keys []string
	for _, b := range []*Binding{old, cur} {
		if b != nil {
			keys = append(keys, bindingKey(b), roleKey(b.RoleKind, b.Namespace, b.RoleName))
		}
	}
	if old != nil && cur != nil && old.equal(cur) {
		return
	}
	x.wakeKeys(ctx, keys...)
}

// clusterRoleChanged wakes the cleanups whose answer rests on aggregation
// when a ClusterRole's labels or aggregationRule changed, or it went.
func (x *Index) clusterRoleChanged(ctx context.Context, oldObj, newObj any) {
	old, _ := unknownState(oldObj).(*ClusterRole)
	if cur, ok := newObj.(*ClusterRole); ok && old != nil && cur.equal(old) {
		return
	}
	x.wakeKeys(ctx, clusterRolesKey)
}
