/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

/*
Package finalizer implements the Kubernetes finalizer protocol correctly, so
that a controller's cleanup runs before the objects it guards go away, and
nothing it guards is ever released before that cleanup succeeded or a
declared policy said to release it.

# The protocol

A finalizer is a key in metadata.finalizers. While any key remains, DELETE
only sets metadata.deletionTimestamp and the object stays, Terminating, until
each owner has cleaned up and removed its key. Getting this right by hand is
subtle; this package does it as follows.

  - Writes touch only metadata.finalizers, with RFC 6902 JSON patches guarded
    by test operations: adding tests the whole current list (or its absence)
    and appends; removing tests the entry at its index and removes it. Both
    also test metadata.uid, so an object recreated under the same name is
    never touched. A stale cached copy therefore cannot re-add a removed key
    or drop someone else's: its patch fails, the object is re-read from the
    API server (not the cache) and the patch is retried, a bounded number of
    times. There is never a full Update and never a merge patch of the list.
    The one exception is cheaper, not weaker: a removal from a built-in kind
    being deleted is a strategic merge patch pinned to the resourceVersion
    read and the UID, deleting the key by value (record.StrategicRemovalPatch).
    NotFound on removal is success.
  - A finalizer is never added to an object being deleted (the API server
    refuses it anyway). After adding, Reconcile returns with Outcome.Added
    set and Proceed false: the caller acts only once it observes the key, so
    no side effect happens without the guard in place.
  - Handlers run in registration order, one finalizer after another, each
    with a per-attempt timeout. They answer Done, Pending (check again later,
    with a reason), Retry (an error, with backoff) or Release (give up on
    purpose, with a reason that is recorded). A handler that panics, hangs or
    answers nonsense is a Retry, never a removal.
  - An optional deadline counts from deletionTimestamp. On expiry, Block (the
    default) keeps the object and says so; Release removes the finalizer with
    a Warning Event and a record of what was skipped.

# Observability

Each finalizer keeps a short JSON record of its cleanup in the annotation
ProgressAnnotation(name) on the object (state, message, attempts, whether the
deadline passed), which `kubectl teardown` reads; it is written only when it
says something new, never on the fast path where the first attempt is done.
Events (CleanupPending, CleanupFailed, FinalizerReleased, DeadlineExceeded,
DeletedBeforeGuarded) go to the recorder given WithEventRecorder. Prometheus
metrics named teardown_finalizer_* (cleanup duration, handler attempts,
cleanups in progress and the age of the oldest, releases by cause, unguarded
deletions, patch conflicts) are registered with controller-runtime's
metrics.Registry; Collectors returns them for other registries.

# Deleted before guarded

An object deleted before its finalizer was added cannot have its cleanup
run: the API server refuses new finalizers once deletion started. Reconcile
never runs a handler for such an object; it reports it once (a log line, a
DeletedBeforeGuarded Event and teardown_finalizer_unguarded_deletions_total).
The gap closes only by adding the finalizer when the object is created,
which is what Teardown's mutating admission webhook does for policies that
ask for it.

# Using it

From a controller-runtime reconciler, build the client with
ForClient(mgr.GetClient(), mgr.GetAPIReader()); from plain client-go code use
ForDynamic with the resource's GroupVersionResource. Typed, unstructured and
metadata-only (metav1.PartialObjectMetadata) objects all work; watching
metadata only keeps a controller's memory independent of object size.

	fin := finalizer.New(finalizer.ForClient(mgr.GetClient(), mgr.GetAPIReader()),
		finalizer.WithEventRecorder(mgr.GetEventRecorder("bucket-controller")))
	err := fin.Register("buckets.example.com/cleanup", finalizer.HandlerFunc(deleteBucket),
		finalizer.WithAttemptTimeout(30*time.Second),
		finalizer.WithDeadline(30*time.Minute, finalizer.ExpiryBlock))

	func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		obj := &v1.Bucket{}
		if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		out, err := r.fin.Reconcile(ctx, obj)
		if !out.Proceed {
			return out.Result(), err // being deleted, or the finalizer was just added
		}
		return r.reconcileNormal(ctx, obj)
	}

Handlers must be idempotent: a crash, a timeout or a lost write runs the same
cleanup again. A handler whose external resource is already gone answers
Done.

Drain removes a finalizer from every object of a kind, for uninstalling a
controller without leaving anything stuck in Terminating.
*/
package finalizer
