/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package guarded reconciles the objects that policies guard, of any kind:
// one metadata-only watch per kind, shared by every policy, so memory does
// not grow with object size.
package guarded

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
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
	"github.com/teardown-dev/teardown/internal/cleantext"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/queuekey"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// Release causes, the cause label of teardown_finalizer_releases_total.
const (
	CauseUnmatched     = "unmatched"
	CauseRetired       = "retired"
	CausePolicyDeleted = "policy-deleted"
)

// Reconciler runs every serving policy's finalizers on a target object.
//
// Objects not being deleted (attach, release) and objects being deleted
// (cleanup) go through two controllers with their own queues and workers:
// slow cleanups never hold up guarding new objects.
type Reconciler struct {
	Client client.Client
	// APIReader reads from the API server what decides a release without
	// cleanup (whether a namespace is being deleted): a cache could be
	// behind.
	APIReader client.Reader
	Index     *policy.Index
	// Records reads which policy started the teardown of an object under
	// a key, or attached the key, from records bound to the object that
	// the controller's keys prove (steps.Records).
	Records Proofs
	// StartedByEarlierRelease reads the policy (UID) a step record of an
	// earlier release names, one not bound to any object
	// (steps.StartedByEarlierRelease); it counts only on objects created
	// before that policy's status.boundRecordsSince (policy.Served.EarlierRelease).
	StartedByEarlierRelease func(obj metav1.Object, key string) (types.UID, bool)
	// PolicyExists reports whether a policy with this UID exists (in the
	// cache), so that a teardown another policy started waits for it rather
	// than being taken over while it is not yet served (after a restart).
	PolicyExists func(ctx context.Context, uid types.UID) (bool, error)

	attach, finalize *queue
	mu               sync.Mutex
	watched          map[schema.GroupVersionKind]bool
}

// queue is one of the two controllers and the channel that resyncs it.
type queue struct {
	ctrl   controller.TypedController[queuekey.Request]
	resync chan event.TypedGenericEvent[*metav1.PartialObjectMetadata]
}

// AttachWorkersPerWorker is how many attach workers each target worker
// gives. Attaching an object is one PATCH, so the attach rate is the attach
// workers over the PATCH's round trip, which a burst of creates lengthens
// just when the rate must be high: with as many workers as cleanup gets,
// objects created faster queued for the whole burst (docs/performance.md,
// Scale).
const AttachWorkersPerWorker = 4

// SetupWithManager creates the controllers, target-finalize with workers
// and target-attach with AttachWorkersPerWorker times as many; watches are
// added per kind by Watch as policies come.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	r.watched = map[schema.GroupVersionKind]bool{}
	var err error
	if r.attach, err = r.newQueue(mgr, "target-attach", AttachWorkersPerWorker*workers); err != nil {
		return err
	}
	r.finalize, err = r.newQueue(mgr, "target-finalize", workers)
	return err
}

func (r *Reconciler) newQueue(mgr manager.Manager, name string, workers int) (*queue, error) {
	c, err := controller.NewTyped[queuekey.Request](name, mgr, controller.TypedOptions[queuekey.Request]{
		Reconciler:              r,
		MaxConcurrentReconciles: workers,
		// Per-object exponential backoff, capped. Not the default's overall
		// 10/s bucket as well: after an outage every waiting cleanup must be
		// retried at once, not ten a second.
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[queuekey.Request](steps.RetryBase, steps.RetryMax),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the %s controller: %w", name, err)
	}
	q := &queue{ctrl: c, resync: make(chan event.TypedGenericEvent[*metav1.PartialObjectMetadata], 1024)}
	if err := c.Watch(source.TypedChannel(q.resync, handler.TypedEnqueueRequestsFromMapFunc(toRequest))); err != nil {
		return nil, err
	}
	return q, nil
}

func toRequest(_ context.Context, obj *metav1.PartialObjectMetadata) []queuekey.Request {
	return []queuekey.Request{queuekey.For(obj.GroupVersionKind(), client.ObjectKeyFromObject(obj))}
}

// Watch starts the metadata-only watch of gvk, once per kind.
func (r *Reconciler) Watch(mgr manager.Manager, gvk schema.GroupVersionKind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watched[gvk] {
		return nil
	}
	for _, q := range []struct {
		*queue
		deleting bool
	}{{r.attach, false}, {r.finalize, true}} {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		src := source.TypedKind(mgr.GetCache(), obj, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, o *metav1.PartialObjectMetadata) []queuekey.Request {
				return []queuekey.Request{queuekey.For(gvk, client.ObjectKeyFromObject(o))}
			}), relevantChange, deletingIs(q.deleting))
		if err := q.ctrl.Watch(src); err != nil {
			return fmt.Errorf("watching %s: %w", gvk, err)
		}
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

// deletingIs routes an object to the queue for its phase; deletions of the
// object itself are of interest to neither.
func deletingIs(deleting bool) predicate.TypedPredicate[*metav1.PartialObjectMetadata] {
	return predicate.NewTypedPredicateFuncs(func(o *metav1.PartialObjectMetadata) bool {
		return (o.DeletionTimestamp != nil) == deleting
	})
}

// CacheSyncTimeout bounds a read of a kind's cache that waits for it to
// sync. A kind the controller may not list or watch never syncs: the read
// fails that policy alone, with a reason in its status, instead of holding a
// worker every policy shares.
const CacheSyncTimeout = 30 * time.Second

// CacheSyncError says what a read that timed out waiting for a kind's cache
// most likely means.
func CacheSyncError(gvk schema.GroupVersionKind, err error) error {
	return fmt.Errorf("the controller's cache of %s did not sync within %s (can the controller list and watch %s?): %w", gvk.Kind, CacheSyncTimeout, gvk.Kind, err)
}

// Resync queues every cached object of gvk, so a new or changed policy is
// applied to objects that already exist.
func (r *Reconciler) Resync(ctx context.Context, gvk schema.GroupVersionKind, opts ...client.ListOption) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	// Only names are read from these: no need for a copy of every object.
	listCtx, cancel := context.WithTimeout(ctx, CacheSyncTimeout)
	defer cancel()
	if err := r.Client.List(listCtx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		if listCtx.Err() != nil && ctx.Err() == nil {
			return CacheSyncError(gvk, err)
		}
		return fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		obj.SetGroupVersionKind(gvk)
		q := r.attach
		if obj.DeletionTimestamp != nil {
			q = r.finalize
		}
		select {
		case q.resync <- event.TypedGenericEvent[*metav1.PartialObjectMetadata]{Object: obj}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Wake queues the cleanup of the given objects being deleted at once, for
// the code that knows a step's wait is over (the object it waits on changed
// or went) before the step's poll would find out. Waking an object that is
// not being deleted, or is gone, costs one cache read.
func (r *Reconciler) Wake(ctx context.Context, reqs ...queuekey.Request) {
	for _, req := range reqs {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(req.GVK())
		key := req.Key()
		obj.SetNamespace(key.Namespace)
		obj.SetName(key.Name)
		select {
		case r.finalize.resync <- event.TypedGenericEvent[*metav1.PartialObjectMetadata]{Object: obj}:
		case <-ctx.Done():
			return
		}
	}
}

// Reconcile applies every key of every policy serving the object's kind.
func (r *Reconciler) Reconcile(ctx context.Context, req queuekey.Request) (reconcile.Result, error) {
	gvk := req.GVK()
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	if err := r.Client.Get(ctx, req.Key(), obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	policies := r.Index.ForKind(gvk)
	if len(policies) == 0 {
		return reconcile.Result{}, nil
	}
	nsLabels, err := r.namespaceLabels(ctx, obj.Namespace, policies)
	if err != nil {
		return reconcile.Result{}, err
	}
	var result reconcile.Result
	var errs []error
	requeue := func(after time.Duration) {
		if after > 0 && (result.RequeueAfter == 0 || after < result.RequeueAfter) {
			result.RequeueAfter = after
		}
	}
	for _, key := range keysIn(policies, gvk, obj) {
		s, k, wait, err := r.actor(ctx, policies, key, gvk, obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("finalizer %s: %w", key, err))
			continue
		}
		requeue(wait)
		if s == nil {
			continue
		}
		ctx := logf.IntoContext(ctx, logf.FromContext(ctx).WithValues("policy", s.Ref.String()))
		after, err := r.apply(ctx, s, k, gvk, obj, nsLabels)
		if err != nil {
			errs = append(errs, fmt.Errorf("policy %s, finalizer %s: %w", s.Ref, k.Key, err))
		}
		requeue(after)
	}
	err = errors.Join(errs...)
	if err != nil && !isCleanupError(err) && apiUnavailable(err) {
		// The API server refused or missed a write (often the finalizer's
		// removal after a successful cleanup): that says nothing about the
		// cleanup, so it must not grow its backoff. Try again soon.
		logf.FromContext(ctx).V(1).Info("API server unavailable; retrying", "err", err.Error())
		return reconcile.Result{RequeueAfter: time.Second + rand.N(2*time.Second)}, nil
	}
	return result, err
}

// keysIn returns the keys that policies serve for obj's kind in obj's
// scope, each once, in a stable order.
func keysIn(policies []*policy.Served, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) []string {
	var keys []string
	for _, s := range policies {
		if !s.InScope(obj) {
			continue
		}
		for _, k := range s.Keys {
			if k.Serves(gvk) && !slices.Contains(keys, k.Key) {
				keys = append(keys, k.Key)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// startedTeardownWait is how soon an object whose teardown another policy
// started, and which is not served yet, is looked at again.
const startedTeardownWait = 5 * time.Second

// actor picks the one policy that acts on obj under key, so that two
// policies never act on one key of one object. A teardown that started
// under a policy (its step record, bound to obj, names it), or of an object
// a policy attached the key to (its attached record, bound to obj, names
// it), finishes under that policy, whoever owns the key now; while that
// policy exists but is not served yet, nobody acts. Otherwise the highest-ranked policy that
// owns the key (not one that yielded it) acts. It returns nil when nobody
// acts, and how soon to look again.
func (r *Reconciler) actor(ctx context.Context, policies []*policy.Served, key string, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) (*policy.Served, policy.ServedKey, time.Duration, error) {
	type candidate struct {
		s *policy.Served
		k policy.ServedKey
	}
	var cands []candidate
	for _, s := range policies {
		if !s.InScope(obj) {
			continue
		}
		for _, k := range s.Keys {
			if k.Key == key && k.Serves(gvk) {
				cands = append(cands, candidate{s, k})
			}
		}
	}
	if obj.DeletionTimestamp != nil && slices.Contains(obj.Finalizers, key) {
		uid := r.provenBy(obj, key)
		if earlier := r.earlierReleaseBy(obj, key); uid == "" && earlier != "" {
			// A teardown the earlier release started, which no record of
			// this release proves or disproves: its policy finishes it.
			for _, c := range cands {
				if c.s.UID == earlier && c.s.EarlierRelease(obj) {
					return c.s, c.k, 0, nil
				}
			}
		}
		if uid != "" {
			for _, c := range cands {
				if c.s.UID == uid {
					return c.s, c.k, 0, nil
				}
			}
			exists := false
			if r.PolicyExists != nil {
				var err error
				if exists, err = r.PolicyExists(ctx, uid); err != nil {
					return nil, policy.ServedKey{}, 0, err
				}
			}
			if exists {
				return nil, policy.ServedKey{}, startedTeardownWait, nil
			}
			// The policy that guarded it is gone (its own finalizer was
			// removed by hand): its records mean "start over".
		}
	}
	var best *candidate
	for i := range cands {
		c := &cands[i]
		if c.k.Finishing {
			continue
		}
		if best == nil || c.s.Outranks(best.s) {
			best = c
		}
	}
	if best == nil {
		return nil, policy.ServedKey{}, 0, nil
	}
	return best.s, best.k, 0, nil
}

// apply brings obj along one key of one policy and says when to look again.
func (r *Reconciler) apply(ctx context.Context, s *policy.Served, k policy.ServedKey, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, nsLabels labels.Set) (time.Duration, error) {
	matches := !k.Retired && !k.Finishing && s.Matches(gvk, obj, nsLabels)
	carries := slices.Contains(obj.Finalizers, k.Key)
	if obj.DeletionTimestamp == nil {
		if !matches && s.Refused.Has(obj.UID) && !s.Matches(gvk, obj, nsLabels) {
			s.Refused.Forget(obj.UID, "") // no longer selected: not this policy's to say
		}
		switch {
		case s.Deleting || k.Finishing:
			return 0, nil // the policy controller releases what it guards; a yielded key is another's
		case matches:
			out, err := k.Fin.Reconcile(ctx, obj)
			if finalizer.IsRefused(err) {
				// Not guarded, and said (an Event from the finalizer, the
				// policy's status): trying again at once fails again, and
				// the change that makes room is an annotation, which does
				// not wake this controller.
				s.Refused.Add(refusedObject(gvk, obj, finalizer.WriteAttach, err))
				return refusedRecheck, nil
			}
			if err == nil {
				s.Refused.Forget(obj.UID, finalizer.WriteAttach)
			}
			return out.RequeueAfter, err
		case carries && finalizer.MarkedAttached(obj, k.Key):
			// Attached here (or claimed to be, at CREATE): releasing a key
			// from an object not being deleted lets nothing go. Unless
			// another policy that still exists attached it: the key is ours
			// now, but that policy yielded it and still owes the object its
			// cleanup, which it runs if the object is deleted (or lets go
			// when it is deleted itself).
			if other, err := r.attachedByAnother(ctx, obj, k.Key, s.UID); err != nil || other {
				return 0, err
			}
			cause, why := CauseUnmatched, fmt.Sprintf("the object no longer matches %s", s.Ref)
			if k.Retired {
				cause, why = CauseRetired, fmt.Sprintf("%s no longer guards %s objects with this key", s.Ref, gvk.Kind)
			}
			return 0, r.release(ctx, s, k, obj, cause, why)
		}
		return 0, nil
	}
	// Being deleted: a teardown that started finishes, whatever edits and
	// label changes came since; only a key this policy owns on this object
	// is touched.
	if !(matches || carries && r.owns(s, k, gvk, obj, nsLabels)) {
		return 0, nil
	}
	if carries && s.Deleting && s.OnPolicyDeletion == teardownv1alpha1.PolicyDeletionRelease {
		// Release lets teardowns go when the policy is uninstalled, never
		// when its namespace (or the object's) is: a namespace being
		// deleted takes its policies with everything else, and every
		// object in it is owed its cleanup.
		terminating, err := NamespaceTerminating(ctx, r.APIReader, obj.Namespace)
		if err != nil {
			return 0, err
		}
		if !terminating {
			return 0, r.release(ctx, s, k, obj, CausePolicyDeleted, fmt.Sprintf("%s was deleted and its onPolicyDeletion is Release", s.Ref))
		}
	}
	out, err := k.Fin.Reconcile(ctx, obj)
	if len(out.Released) > 0 {
		s.Released.Add(int64(len(out.Released)))
	}
	if out.Refused != nil {
		s.Refused.Add(refusedObject(gvk, obj, finalizer.WriteProgress, out.Refused))
	} else if err == nil || len(out.Removed) > 0 {
		s.Refused.Forget(obj.UID, finalizer.WriteProgress)
	}
	return out.RequeueAfter, err
}

// refusedRecheck is how soon an object whose attach patch the API server
// refused is tried again.
const refusedRecheck = time.Minute

// refusedObject is obj's entry in its policy's refused objects.
func refusedObject(gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, write string, err error) policy.RefusedObject {
	return policy.RefusedObject{UID: obj.UID, GVK: gvk, Namespace: obj.Namespace, Name: obj.Name, Write: write,
		Message: cleantext.Clean(finalizer.RefusalMessage(err), maxRefusedMessage), Since: time.Now().UTC().Truncate(time.Second)}
}

// maxRefusedMessage bounds a refused object's message, as the CRD does.
const maxRefusedMessage = 512

// Owns reports whether k on obj, which carries it, is the policy's to
// remove: obj is in the policy's scope and of a kind k is served for, and
// the policy's selectors match it (not for a retired or yielded key), or
// provenBy is this policy: a record bound to obj (written for this very
// object, which no record written at CREATE or restored from a backup is)
// says this policy started its cleanup under k, or attached k to it. A key
// put there by anyone else on an object the policy does not select is never
// touched, nor is one another policy attached.
func Owns(s *policy.Served, k policy.ServedKey, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, nsLabels labels.Set, provenBy types.UID) bool {
	if !s.InScope(obj) || !k.Serves(gvk) || !slices.Contains(obj.Finalizers, k.Key) {
		return false
	}
	if provenBy != "" && provenBy == s.UID {
		return true
	}
	return !k.Finishing && !k.Retired && s.Matches(gvk, obj, nsLabels)
}

// provenBy returns the UID of the policy that records on obj, bound to it,
// say guarded it under key: the one that started its teardown (step
// record), else the one that attached the key (attached record); "" when
// no record does.
func (r *Reconciler) provenBy(obj metav1.Object, key string) types.UID {
	return ProvenBy(obj, key, r.Records)
}

// Proofs reads the records that say which policy guarded an object under
// a key, as far as they are proven to be the controller's (steps.Records).
type Proofs interface {
	// StartedBy is the policy whose teardown of obj started under key
	// (the step record).
	StartedBy(obj metav1.Object, key string) (types.UID, bool)
	// AttachedBy is the policy that attached key to obj (the attached
	// record).
	AttachedBy(obj metav1.Object, key string) (types.UID, bool)
}

// earlierReleaseBy returns the UID of the policy an earlier release's step
// record on obj names under key ("" when there is none).
func (r *Reconciler) earlierReleaseBy(obj metav1.Object, key string) types.UID {
	if r.StartedByEarlierRelease == nil {
		return ""
	}
	uid, _ := r.StartedByEarlierRelease(obj, key)
	return uid
}

// owns is Owns from the records on obj, or, when none of this release's
// proves anything, an earlier release's step record naming s on an object
// created before s.BoundRecordsSince: that teardown is finished like one a
// bound record proves (UPGRADING.md).
func (r *Reconciler) owns(s *policy.Served, k policy.ServedKey, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, nsLabels labels.Set) bool {
	proven := r.provenBy(obj, k.Key)
	if Owns(s, k, gvk, obj, nsLabels, proven) {
		return true
	}
	return proven == "" && obj.DeletionTimestamp != nil && s.InScope(obj) && k.Serves(gvk) &&
		r.earlierReleaseBy(obj, k.Key) == s.UID && s.EarlierRelease(obj)
}

// attachedByAnother reports whether key's attached record on obj is bound
// to it, proven (Records), and names a policy other than self that exists.
func (r *Reconciler) attachedByAnother(ctx context.Context, obj metav1.Object, key string, self types.UID) (bool, error) {
	if r.Records == nil || r.PolicyExists == nil {
		return false, nil
	}
	by, ok := r.Records.AttachedBy(obj, key)
	if !ok || by == "" || by == self {
		return false, nil
	}
	return r.PolicyExists(ctx, by)
}

// ProvenBy is provenBy for callers with their own Proofs (nil: none).
func ProvenBy(obj metav1.Object, key string, proofs Proofs) types.UID {
	if proofs == nil {
		return ""
	}
	if uid, ok := proofs.StartedBy(obj, key); ok {
		return uid
	}
	if by, ok := proofs.AttachedBy(obj, key); ok {
		return by
	}
	return ""
}

func (r *Reconciler) release(ctx context.Context, s *policy.Served, k policy.ServedKey, obj *metav1.PartialObjectMetadata, cause, why string) error {
	removed, err := k.Fin.Release(ctx, obj, k.Key, cause, why)
	if err != nil {
		return fmt.Errorf("releasing %s: %w", klog.KObj(obj), err)
	}
	if removed {
		s.Released.Add(1)
	}
	return nil
}

// namespaceLabels reads the namespace's labels when a policy selects
// namespaces; nil otherwise.
func (r *Reconciler) namespaceLabels(ctx context.Context, ns string, policies []*policy.Served) (labels.Set, error) {
	if ns == "" || !slices.ContainsFunc(policies, func(p *policy.Served) bool {
		return slices.ContainsFunc(p.Targets, func(t policy.Selector) bool { return t.NamespaceSelector != nil })
	}) {
		return nil, nil
	}
	return NamespaceLabels(ctx, r.Client, ns)
}

// NamespaceTerminating reports whether namespace ns is being deleted (or is
// gone). Cluster-scoped objects (ns "") are in no namespace. Callers that
// release on its answer pass a reader of the API server, not a cache.
func NamespaceTerminating(ctx context.Context, c client.Reader, ns string) (bool, error) {
	if ns == "" {
		return false, nil
	}
	nsObj := &metav1.PartialObjectMetadata{}
	nsObj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	return nsObj.DeletionTimestamp != nil, nil
}

// NamespaceLabels reads a namespace's labels (from the cache when c is
// cached).
func NamespaceLabels(ctx context.Context, c client.Reader, ns string) (labels.Set, error) {
	nsObj := &metav1.PartialObjectMetadata{}
	nsObj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	return nsObj.Labels, nil
}
