/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

var (
	configMaps      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
)

// The labels of what the benchmark creates: the policies select them.
const (
	scaleLabel = "scale"
	cmValue    = "cm"   // guarded ConfigMaps, one TeardownPolicy per namespace
	userValue  = "user" // guarded ServiceAccounts, the ClusterTeardownPolicy
	userSA     = "scale-user"
	bigNs      = "scale-big"
	unusedKey  = "scale.example.com/unused"
)

func nsName(i int) string { return fmt.Sprintf("scale-%04d", i) }

// policyKey is one key per namespace: the controller refuses two policies
// sharing a key for a kind, and outside teardown.dev a policy may use any.
func policyKey(ns string) string { return "scale.example.com/" + ns }

// createNamespace creates ns, whose default ServiceAccount (the identity of
// its TeardownPolicy) may patch its ConfigMaps.
func (s *scaler) createNamespace(ctx context.Context, ns string) error {
	if _, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "scale-policy", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch"}},
	}}
	if _, err := s.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the policy's Role in %s: %w", ns, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scale-policy", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}}}
	if _, err := s.kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding the policy's Role in %s: %w", ns, err)
	}
	return nil
}

// createPolicy creates ns's TeardownPolicy: Automatic, no steps, on its
// ConfigMaps.
func (s *scaler) createPolicy(ctx context.Context, ns string) error {
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "scale", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: policyKey(ns),
			Attach:    teardownv1alpha1.AttachAutomatic,
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{scaleLabel: cmValue}}}},
		},
	}
	if err := s.crc.Create(ctx, pol); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating policy %s/scale: %w", ns, err)
	}
	return nil
}

// createClusterPolicy creates the ClusterTeardownPolicy whose unused step
// keeps each namespace's scale-user ServiceAccount until no pod runs as it.
func (s *scaler) createClusterPolicy(ctx context.Context) error {
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "scale-unused"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: unusedKey,
			Attach:    teardownv1alpha1.AttachAutomatic,
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ServiceAccount",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{scaleLabel: userValue}}}},
			Steps: []teardownv1alpha1.Step{{Name: "unused", Unused: &teardownv1alpha1.UnusedAction{}}},
		},
	}
	if err := s.crc.Create(ctx, pol); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterTeardownPolicy %s: %w", pol.Name, err)
	}
	return nil
}

// notReady counts the policies (of both kinds) whose Ready condition is
// not True.
func (s *scaler) notReady(ctx context.Context) (notReady, total int, err error) {
	var ns teardownv1alpha1.TeardownPolicyList
	if err := s.crc.List(ctx, &ns); err != nil {
		return 0, 0, err
	}
	var cl teardownv1alpha1.ClusterTeardownPolicyList
	if err := s.crc.List(ctx, &cl); err != nil {
		return 0, 0, err
	}
	conds := make([][]metav1.Condition, 0, len(ns.Items)+len(cl.Items))
	for _, p := range ns.Items {
		conds = append(conds, p.Status.Conditions)
	}
	for _, p := range cl.Items {
		conds = append(conds, p.Status.Conditions)
	}
	for _, c := range conds {
		if !meta.IsStatusConditionTrue(c, teardownv1alpha1.ReadyCondition) {
			notReady++
		}
	}
	return notReady, len(conds), nil
}

func (s *scaler) createConfigMap(ctx context.Context, ns, name string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{scaleLabel: cmValue}},
		Data: map[string]string{"k": "v"}}
	if _, err := s.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, name, err)
	}
	return nil
}

// createUser creates ns's scale-user ServiceAccount, guarded by the
// cluster policy.
func (s *scaler) createUser(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: userSA, Namespace: ns, Labels: map[string]string{scaleLabel: userValue}}}
	if _, err := s.kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/%s: %w", ns, userSA, err)
	}
	return nil
}

// createPod creates a pod running as scale-user: never scheduled (no
// scheduler, no node), so it stays Pending, counts as a user of the
// ServiceAccount in the unused step's index, and goes at once when deleted.
func (s *scaler) createPod(ctx context.Context, ns, name string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{ServiceAccountName: userSA, AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := s.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// parallel runs fn for 0..n-1 on workers goroutines and returns the first
// error, after which no new index is started.
func parallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// tracker watches one resource cluster-wide (metadata only, the label
// scale=value) and records when each object was first seen on the watch,
// when it first carried a finalizer and when it was gone. The benchmark
// creates objects with none, so any finalizer is a key the controller
// attached; the first sight is the API server's delivery of the creation
// to a watch, which the controller's own watch waits for too.
type tracker struct {
	cancel   context.CancelFunc
	mu       sync.Mutex
	seen     map[string]time.Time
	attached map[string]time.Time
	gone     map[string]time.Time
}

func (s *scaler) track(ctx context.Context, gvr schema.GroupVersionResource, value string) (*tracker, error) {
	sel := scaleLabel + "=" + value
	list, err := s.meta.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvr.Resource, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return s.meta.Resource(gvr).Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching %s: %w", gvr.Resource, err)
	}
	t := &tracker{cancel: cancel, seen: map[string]time.Time{}, attached: map[string]time.Time{}, gone: map[string]time.Time{}}
	go func() {
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				obj, ok := ev.Object.(*metav1.PartialObjectMetadata)
				if !ok {
					continue
				}
				now, key := time.Now(), obj.Namespace+"/"+obj.Name
				t.mu.Lock()
				if _, ok := t.seen[key]; !ok {
					t.seen[key] = now
				}
				switch ev.Type {
				case watch.Added, watch.Modified:
					if _, seen := t.attached[key]; !seen && len(obj.Finalizers) > 0 {
						t.attached[key] = now
					}
				case watch.Deleted:
					t.gone[key] = now
				}
				t.mu.Unlock()
			}
		}
	}()
	return t, nil
}

func (t *tracker) stop() { t.cancel() }

func (t *tracker) counts() (attached, gone int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.attached), len(t.gone)
}

// last returns when the latest object was first seen attached.
func (t *tracker) last() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Time
	for _, at := range t.attached {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// attachedAt returns when key was first seen on the watch and when first
// with a finalizer; ok is false until both.
func (t *tracker) attachedAt(key string) (seen, attached time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	attached, ok = t.attached[key]
	return t.seen[key], attached, ok
}

// waitFor polls cond every `every` until it holds, ctx ends or timeout
// passes; the error says what was awaited and what was last seen.
func waitFor(ctx context.Context, every, timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (%s)", timeout, what, seen)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// exists reports whether obj is still there.
func (s *scaler) exists(ctx context.Context, obj client.Object) (bool, error) {
	err := s.crc.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
