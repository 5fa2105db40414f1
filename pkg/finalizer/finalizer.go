/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// Event reasons, for `kubectl get events --field-selector reason=...`.
const (
	ReasonCleanupPending       = "CleanupPending"
	ReasonCleanupFailed        = "CleanupFailed"
	ReasonFinalizerReleased    = record.ReasonFinalizerReleased
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonDeletedBeforeGuarded = "DeletedBeforeGuarded"
)

// DefaultAttemptTimeout bounds one handler call unless WithAttemptTimeout says
// otherwise.
const DefaultAttemptTimeout = time.Minute

// progressRewriteAfter throttles rewriting a progress record whose state is
// unchanged but whose message changed: every write is a watch event that
// triggers another reconcile, which must not turn backoff into a hot loop.
const progressRewriteAfter = 10 * time.Second

// Finalizers runs the finalizer protocol for one controller: it attaches its
// finalizers to objects, and when an object is being deleted it runs their
// handlers in registration order and removes each finalizer only when its
// handler is done (or a declared policy releases it).
//
// Register every finalizer before the first Reconcile; Reconcile is then safe
// to call from many goroutines.
type Finalizers struct {
	client   Client
	recorder events.EventRecorder
	now      func() time.Time
	entries  []*entry
	// attacher names who attaches, in the attached records
	// (WithAttachedBy), and seals them (WithAttachedSealer).
	attacher attacher
	// guard binds removals and progress records to the object as read
	// (WithGuard); nil tests only the finalizer list.
	guard Guard

	mu       sync.Mutex
	attempts map[inProgressKey]int
	// finished remembers objects whose finalizer we removed, so that seeing
	// them later without it is not mistaken for an unguarded deletion.
	finished *uidSet
	reported *uidSet
	// cleaned remembers cleanups whose handler said Done but whose
	// finalizer could not be removed yet (the API server refused or was
	// away): the next attempt removes it without running the handler
	// again. Memory only: losing it costs a repeated, idempotent cleanup,
	// never an early removal.
	cleaned *keySet
	// refusals remembers the refused writes already announced (one Event
	// per object, key and write), forgotten when the write goes through.
	refusals *boundedSet[refusal]
}

// refusal is one refused write of one key on one object.
type refusal struct {
	write, finalizer string
	uid              types.UID
}

type entry struct {
	name           string
	handler        Handler
	attach         Attach
	attemptTimeout time.Duration
	deadline       time.Duration
	onExpiry       Expiry
}

// Option configures Finalizers.
type Option func(*Finalizers)

// WithEventRecorder sends Events about cleanups to r. Without it no Events
// are written.
func WithEventRecorder(r events.EventRecorder) Option {
	return func(f *Finalizers) { f.recorder = r }
}

// WithAttachedBy names who attaches the keys, in the attached records these
// Finalizers write ("<object UID>/<by>"), for a controller whose keys have
// several owners (one per policy, say) that must tell the objects each
// attached apart (AttachedBy). A key selected by this owner that another
// attached is bound to this one when it attaches.
func WithAttachedBy(by string) Option { return func(f *Finalizers) { f.attacher.by = by } }

// WithAttachedSealer seals the attached records these Finalizers write
// ("<object UID>/<by>#<seal>"), and counts a record as this owner's only
// when its seal checks: one without (written by anyone who may patch the
// object, or by an earlier version) is bound again, sealed, when the key is
// selected. The controller that reads the records checks the seal itself
// (AttachedRecord.SealChecks).
func WithAttachedSealer(s Sealer) Option { return func(f *Finalizers) { f.attacher.sealer = s } }

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option {
	return func(f *Finalizers) { f.now = now }
}

// New returns Finalizers that read and write objects through c.
func New(c Client, opts ...Option) *Finalizers {
	f := &Finalizers{
		client:   c,
		now:      time.Now,
		attempts: map[inProgressKey]int{},
		finished: newUIDSet(10000),
		reported: newUIDSet(10000),
		cleaned:  newKeySet(10000),
		refusals: &boundedSet[refusal]{limit: 10000, set: map[refusal]struct{}{}},
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// RegisterOption configures one finalizer.
type RegisterOption func(*entry)

// WithAttach sets when the finalizer is put on objects (default
// AttachAutomatic).
func WithAttach(a Attach) RegisterOption { return func(e *entry) { e.attach = a } }

// WithAttemptTimeout bounds each handler call (default DefaultAttemptTimeout).
func WithAttemptTimeout(d time.Duration) RegisterOption {
	return func(e *entry) { e.attemptTimeout = d }
}

// WithDeadline bounds the whole cleanup, counted from the object's
// deletionTimestamp, and says what happens when it passes.
func WithDeadline(d time.Duration, onExpiry Expiry) RegisterOption {
	return func(e *entry) { e.deadline, e.onExpiry = d, onExpiry }
}

// Register adds a finalizer and its handler. Finalizers run in the order they
// are registered: the second one's handler starts only once the first one is
// removed.
func (f *Finalizers) Register(name string, h Handler, opts ...RegisterOption) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("finalizer %q: handler is nil", name)
	}
	if slices.ContainsFunc(f.entries, func(e *entry) bool { return e.name == name }) {
		return fmt.Errorf("finalizer %q is already registered", name)
	}
	e := &entry{name: name, handler: h, attach: AttachAutomatic, attemptTimeout: DefaultAttemptTimeout, onExpiry: ExpiryBlock}
	for _, o := range opts {
		o(e)
	}
	switch {
	case e.attach != AttachAutomatic && e.attach != AttachDeclared:
		return fmt.Errorf("finalizer %q: attach must be %s or %s, not %q", name, AttachAutomatic, AttachDeclared, e.attach)
	case e.onExpiry != ExpiryBlock && e.onExpiry != ExpiryRelease:
		return fmt.Errorf("finalizer %q: on expiry must be %s or %s, not %q", name, ExpiryBlock, ExpiryRelease, e.onExpiry)
	case e.attemptTimeout <= 0:
		return fmt.Errorf("finalizer %q: attempt timeout must be positive, not %s", name, e.attemptTimeout)
	case e.deadline < 0:
		return fmt.Errorf("finalizer %q: deadline must not be negative, not %s", name, e.deadline)
	}
	f.entries = append(f.entries, e)
	return nil
}

// Names returns the registered finalizers in order.
func (f *Finalizers) Names() []string {
	names := make([]string, len(f.entries))
	for i, e := range f.entries {
		names[i] = e.name
	}
	return names
}

// Reconcile brings obj one step along the protocol. obj must be a copy the
// caller owns, because it is refreshed from every write: controller-runtime's
// cached client hands out copies, but an object from a client-go lister is
// the cache's own and must be DeepCopied first.
//
//   - Not being deleted: adds the missing automatic finalizers and returns
//     with Added set; the caller returns and proceeds only when a later call
//     says Proceed, so that no side effect happens before the guard is in
//     place.
//   - Being deleted: runs the handler of the first registered finalizer still
//     on the object and acts on its Result; a Done or Release moves on to the
//     next one in the same call.
//
// A returned error means "retry with backoff"; Outcome.Result() gives the
// requeue otherwise.
func (f *Finalizers) Reconcile(ctx context.Context, obj client.Object) (Outcome, error) {
	if err := checkObject(obj); err != nil {
		return Outcome{}, err
	}
	if len(f.entries) == 0 {
		return Outcome{}, errors.New("no finalizer registered")
	}
	if obj.GetDeletionTimestamp() == nil {
		added, err := add(ctx, f.client, obj, f.automaticMissing(obj), &f.attacher)
		switch {
		case errors.Is(err, ErrBeingDeleted):
			// Deleted between our read and our write: what we never guarded
			// is reported by finalize.
		case err != nil:
			f.reportRefused(ctx, obj, WriteAttach, f.automaticMissing(obj), err)
			return Outcome{}, err
		case len(added) > 0:
			f.forgetRefused(obj, WriteAttach, added)
			return Outcome{Added: added}, nil
		}
		if obj.GetDeletionTimestamp() == nil {
			if err := bindAttached(ctx, f.client, obj, f.unboundAutomatic(obj), f.attacher); err != nil {
				return Outcome{}, err
			}
			return Outcome{Proceed: true}, nil
		}
	}
	return f.finalize(ctx, obj)
}

// unboundAutomatic returns the Automatic keys obj carries with an attached
// record that is not bound to it (written at CREATE by the attach webhook,
// or by an earlier version: "true"), or that names another owner (one
// whose key these Finalizers took over, while the object is selected).
func (f *Finalizers) unboundAutomatic(obj client.Object) []string {
	var names []string
	for _, e := range f.entries {
		if e.attach != AttachAutomatic || !slices.Contains(obj.GetFinalizers(), e.name) || !MarkedAttached(obj, e.name) {
			continue
		}
		rec, bound := ReadAttached(obj, e.name)
		if !bound || rec.By != f.attacher.by || f.attacher.sealer != nil && !rec.SealChecks(f.attacher.sealer, AttachedAnnotation(e.name), string(obj.GetUID())) {
			names = append(names, e.name)
		}
	}
	return names
}

func (f *Finalizers) automaticMissing(obj client.Object) []string {
	var names []string
	for _, e := range f.entries {
		if e.attach == AttachAutomatic && !slices.Contains(obj.GetFinalizers(), e.name) {
			names = append(names, e.name)
		}
	}
	return names
}

func (f *Finalizers) finalize(ctx context.Context, obj client.Object) (Outcome, error) {
	var out Outcome
	for {
		if obj.GetDeletionTimestamp() == nil {
			// A re-read found another object under the same name.
			return out, nil
		}
		e := f.next(obj)
		if e == nil {
			if len(out.Removed) == 0 {
				f.reportUnguarded(ctx, obj)
			}
			return out, nil
		}
		res, refused := f.attempt(ctx, obj, e)
		if refused != nil {
			out.Refused = refused
		}
		switch res.State {
		case StateDone, StateRelease:
			removed, err := f.remove(ctx, obj, e, res)
			if err != nil {
				if res.State == StateDone {
					f.cleaned.add(inProgressKey{finalizer: e.name, uid: obj.GetUID()})
				}
				return out, err
			}
			if removed {
				out.Removed = append(out.Removed, e.name)
				if res.State == StateRelease {
					out.Released = append(out.Released, e.name)
				}
			}
		case StatePending:
			out.RequeueAfter = f.capToDeadline(obj, e, res.After)
			return out, nil
		case StateRetry:
			if res.After > 0 {
				// RetryAfter: the failure is recorded and said; the
				// handler's own time, not the work queue's backoff.
				out.RequeueAfter = f.capToDeadline(obj, e, res.After)
				return out, nil
			}
			return out, &CleanupError{Finalizer: e.name, Object: describe(obj), Err: res.Err}
		default:
			return out, &CleanupError{Finalizer: e.name, Object: describe(obj), Err: res.Err}
		}
	}
}

// next returns the first registered finalizer still on obj.
func (f *Finalizers) next(obj client.Object) *entry {
	for _, e := range f.entries {
		if slices.Contains(obj.GetFinalizers(), e.name) {
			return e
		}
	}
	return nil
}

// attempt applies the deadline, then calls the handler and records what it
// answered. The result is what to do with the finalizer; the error is a
// RefusedError when the API server refused the progress record.
func (f *Finalizers) attempt(ctx context.Context, obj client.Object, e *entry) (Result, error) {
	deletedAt := obj.GetDeletionTimestamp().Time
	key := inProgressKey{finalizer: e.name, uid: obj.GetUID()}
	prev, _ := readOneProgress(obj, e.name)
	expired := e.deadline > 0 && f.now().Sub(deletedAt) > e.deadline
	if wait := waitBeforeNextAttempt(prev, f.now()); wait > 0 && !expired {
		// Our own progress write woke us before the handler's check-again
		// time: honour it instead of calling the handler early.
		return Pending(wait, prev.Message), nil
	}
	if f.cleaned.has(key) {
		return Done(), nil
	}
	n := f.countAttempt(key, prev.Attempts)

	if expired && e.onExpiry == ExpiryRelease {
		skipped := "cleanup never reported done"
		if prev.Message != "" {
			skipped = fmt.Sprintf("last state %s: %s", prev.State, prev.Message)
		}
		if !prev.DeadlineExceeded {
			deadlinesExceeded.WithLabelValues(e.name, string(ExpiryRelease)).Inc()
		}
		return Result{State: StateRelease, cause: causeDeadline,
			Reason: fmt.Sprintf("deadline %s exceeded after %d attempts; skipped cleanup (%s)", e.deadline, n-1, skipped)}, nil
	}

	inFlight.start(e.name, obj.GetUID(), deletedAt)
	started := f.now()
	res, handlers := f.call(ctx, obj, e)
	adopt(obj, handlers)
	attempts.WithLabelValues(e.name, string(res.State)).Inc()
	// Key-values at the call, not a logger WithValues per attempt: zap
	// encodes those at once, for every object, logged or not.
	logf.FromContext(ctx).V(4).Info("Cleanup attempt", "finalizer", e.name, "object", klog.KObj(obj),
		"attempt", n, "state", res.State, "reason", res.Reason, "took", f.now().Sub(started))

	if res.State == StatePending || res.State == StateRetry {
		p := Progress{Finalizer: e.name, State: res.State, Message: res.Reason, Attempts: n, DeadlineExceeded: expired}
		if res.After > 0 {
			next := f.now().Add(res.After).UTC()
			p.NextAttempt = &next
		}
		if expired && !prev.DeadlineExceeded {
			deadlinesExceeded.WithLabelValues(e.name, string(ExpiryBlock)).Inc()
			f.event(obj, corev1.EventTypeWarning, ReasonDeadlineExceeded,
				"Cleanup %q passed its deadline of %s; blocking deletion until it is done (%s)", e.name, e.deadline, res.Reason)
		}
		return res, f.recordProgress(ctx, obj, prev, p)
	}
	f.forgetRefused(obj, WriteProgress, []string{e.name})
	return res, nil
}

// call runs the handler with a per-attempt timeout, turning a panic or a hang
// into a Retry. A handler that ignores its context is left behind: its late
// answer is discarded, never acted on. With an answer, call returns the
// handler's copy of obj, which holds the API server's answer to what the
// handler wrote.
func (f *Finalizers) call(ctx context.Context, obj client.Object, e *entry) (Result, client.Object) {
	ctx, cancel := context.WithTimeout(ctx, e.attemptTimeout)
	defer cancel()
	answer := make(chan Result, 1)
	target := obj.DeepCopyObject().(client.Object)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				logf.FromContext(ctx).Error(fmt.Errorf("%v", r), "Cleanup handler panicked", "finalizer", e.name, "stack", string(debug.Stack()))
				answer <- Retry(fmt.Errorf("handler panicked: %v", r))
			}
		}()
		answer <- e.handler.Finalize(ctx, target)
	}()
	select {
	case res := <-answer:
		switch res.State {
		case StateDone, StatePending, StateRetry, StateRelease:
			return res, target
		default:
			return Retry(fmt.Errorf("handler answered an unknown state %q", res.State)), target
		}
	case <-ctx.Done():
		return Retry(fmt.Errorf("handler did not answer within %s: %w", e.attemptTimeout, ctx.Err())), nil
	}
}

// Release causes, the cause label of teardown_finalizer_releases_total.
const (
	causeHandler  = "handler"
	causeDeadline = "deadline"
)

// Release removes a registered finalizer from obj without its cleanup, on
// purpose, recording it as a handler's Release is recorded (progress record,
// FinalizerReleased Event, log, releases_total with the given cause). Use it
// when an object leaves the controller's scope, so it is not left stuck. It
// reports whether this call removed the finalizer.
func (f *Finalizers) Release(ctx context.Context, obj client.Object, name, cause, reason string) (bool, error) {
	if err := checkObject(obj); err != nil {
		return false, err
	}
	i := slices.IndexFunc(f.entries, func(e *entry) bool { return e.name == name })
	if i < 0 {
		return false, fmt.Errorf("finalizer %q is not registered", name)
	}
	res := Result{State: StateRelease, Reason: reason, cause: cause}
	if obj.GetDeletionTimestamp() == nil {
		// Released because of what the object was while not being deleted:
		// if its deletion starts meanwhile, its cleanup is owed after all.
		return f.removeIf(ctx, obj, f.entries[i], res, func(o client.Object) bool { return o.GetDeletionTimestamp() == nil })
	}
	return f.remove(ctx, obj, f.entries[i], res)
}

// remove takes the finalizer off after Done or Release. A release is
// recorded on the object first, so the record survives on objects other
// finalizers still hold; it is counted, and announced, only by the call that
// actually removed the finalizer (a stale copy may ask twice).
func (f *Finalizers) remove(ctx context.Context, obj client.Object, e *entry, res Result) (bool, error) {
	return f.removeIf(ctx, obj, e, res, nil)
}

// removeIf is remove that removes only while still(obj) holds (see
// removeIf of the patch functions).
func (f *Finalizers) removeIf(ctx context.Context, obj client.Object, e *entry, res Result, still func(client.Object) bool) (bool, error) {
	deletedAt := obj.GetDeletionTimestamp()
	uid := obj.GetUID()
	cause := res.cause
	if cause == "" {
		cause = causeHandler
	}
	if res.State == StateRelease {
		prev, _ := readOneProgress(obj, e.name)
		p := Progress{Finalizer: e.name, State: StateRelease, Message: res.Reason, Attempts: prev.Attempts, DeadlineExceeded: cause == causeDeadline}
		// A refused record of a release is logged only: the key goes anyway.
		_ = f.recordProgress(ctx, obj, Progress{}, p)
	}
	removed, err := removeIf(ctx, f.client, obj, e.name, still, f.guard)
	if err != nil || !removed {
		return false, err
	}
	outcome := "done"
	if res.State == StateRelease {
		outcome = "released"
		f.event(obj, corev1.EventTypeWarning, ReasonFinalizerReleased, "Released %q without its cleanup: %s", e.name, res.Reason)
		logf.FromContext(ctx).Info("Released finalizer without its cleanup", "finalizer", e.name, "object", klog.KObj(obj), "cause", cause, "reason", res.Reason)
		releases.WithLabelValues(e.name, cause).Inc()
	}
	if deletedAt != nil {
		cleanupDuration.WithLabelValues(e.name, outcome).Observe(f.now().Sub(deletedAt.Time).Seconds())
	}
	inFlight.finish(e.name, uid)
	f.finished.add(uid)
	f.cleaned.remove(inProgressKey{finalizer: e.name, uid: uid})
	f.mu.Lock()
	delete(f.attempts, inProgressKey{finalizer: e.name, uid: uid})
	f.mu.Unlock()
	logf.FromContext(ctx).V(2).Info("Removed finalizer", "finalizer", e.name, "object", klog.KObj(obj), "outcome", outcome)
	return true, nil
}

// countAttempt returns this attempt's number. The count lives in memory and
// resumes from the progress record after a restart.
func (f *Finalizers) countAttempt(key inProgressKey, recorded int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := max(f.attempts[key], recorded) + 1
	f.attempts[key] = n
	return n
}

// recordProgress writes p as the finalizer's progress annotation when it says
// something new: a new state, a passed deadline, or a new message or attempt
// count not written in the last progressRewriteAfter. It returns a
// RefusedError when the API server refused the record of a cleanup still
// under way (the object being deleted has no room for it), said once per
// object in a ProgressRefused Event; other failures, and a refused record
// of a release (the key goes anyway), are logged only.
func (f *Finalizers) recordProgress(ctx context.Context, obj client.Object, prev, p Progress) error {
	now := f.now()
	if prev.State == p.State && prev.DeadlineExceeded == p.DeadlineExceeded &&
		(prev.Message == p.Message && prev.Attempts == p.Attempts || now.Sub(prev.Updated) < progressRewriteAfter) {
		f.forgetRefused(obj, WriteProgress, []string{p.Finalizer})
		return nil
	}
	p.Updated = now.UTC().Truncate(time.Second)
	err := f.writeProgress(ctx, obj, p)
	if err != nil {
		// Progress is advisory; the finalizer protocol does not depend on it.
		// Said at the default level: without it, Events and the CLI go blind
		// (RBAC's escalation check refuses annotating some RBAC objects).
		if Refused(err) && p.State != StateRelease {
			refused := &RefusedError{Write: WriteProgress, Object: describe(obj), Err: err}
			f.reportRefused(ctx, obj, WriteProgress, []string{p.Finalizer}, refused)
			return refused
		}
		logf.FromContext(ctx).Info("Could not record cleanup progress", "finalizer", p.Finalizer, "object", klog.KObj(obj), "err", err.Error())
		return nil
	}
	f.forgetRefused(obj, WriteProgress, []string{p.Finalizer})
	switch p.State {
	case StatePending:
		f.event(obj, corev1.EventTypeNormal, ReasonCleanupPending, "Cleanup %q is in progress: %s", p.Finalizer, p.Message)
	case StateRetry:
		f.event(obj, corev1.EventTypeWarning, ReasonCleanupFailed, "Cleanup %q failed (attempt %d): %s", p.Finalizer, p.Attempts, p.Message)
	}
	return nil
}

// reportRefused counts a write of names on obj that err says the API
// server refused (IsRefused), and says so in a Warning Event and the log,
// once per object, key and write until the write goes through. Other
// errors are left to the caller.
func (f *Finalizers) reportRefused(ctx context.Context, obj client.Object, write string, names []string, err error) {
	if !IsRefused(err) || len(names) == 0 {
		return
	}
	announce := false
	for _, n := range names {
		writesRefused.WithLabelValues(n, write).Inc()
		if f.refusals.add(refusal{write: write, finalizer: n, uid: obj.GetUID()}) {
			announce = true
		}
	}
	if !announce {
		return
	}
	why := RefusalMessage(err)
	switch write {
	case WriteAttach:
		logf.FromContext(ctx).Info("The API server refused to add finalizers; the object is not guarded", "object", klog.KObj(obj), "finalizers", names, "err", why)
		f.event(obj, corev1.EventTypeWarning, ReasonAttachRefused,
			"Finalizers %v could not be added, so a deletion will not wait for their cleanup: the API server refused the patch (%s)", names, why)
	case WriteProgress:
		logf.FromContext(ctx).Info("The API server refused the cleanup's progress record; the deletion stays held", "object", klog.KObj(obj), "finalizers", names, "err", why)
		f.event(obj, corev1.EventTypeWarning, ReasonProgressRefused,
			"Cleanup %v cannot record its progress on the object, which stays until the cleanup finishes: the API server refused the record (%s)", names, why)
	}
}

// forgetRefused forgets that writes of names on obj were refused, once one
// went through.
func (f *Finalizers) forgetRefused(obj client.Object, write string, names []string) {
	for _, n := range names {
		f.refusals.remove(refusal{write: write, finalizer: n, uid: obj.GetUID()})
	}
}

// capToDeadline shortens a pending requeue so an expiring deadline is acted on
// when it passes, not at the next scheduled check.
func (f *Finalizers) capToDeadline(obj client.Object, e *entry, after time.Duration) time.Duration {
	if e.deadline <= 0 {
		return after
	}
	left := obj.GetDeletionTimestamp().Add(e.deadline).Sub(f.now()) + time.Second
	if left > 0 && (after <= 0 || left < after) {
		return left
	}
	return after
}

// reportUnguarded says, once per object, that an object is being deleted
// without ever having carried our automatic finalizers: its cleanup cannot
// run. An admission webhook that adds the finalizer at CREATE closes this gap.
func (f *Finalizers) reportUnguarded(ctx context.Context, obj client.Object) {
	var names []string
	for _, e := range f.entries {
		if e.attach == AttachAutomatic {
			names = append(names, e.name)
		}
	}
	uid := obj.GetUID()
	if len(names) == 0 || f.finished.has(uid) || !f.reported.add(uid) {
		return
	}
	for _, n := range names {
		unguarded.WithLabelValues(n).Inc()
	}
	logf.FromContext(ctx).Info("Object was deleted before its finalizers were added; its cleanup will not run",
		"object", klog.KObj(obj), "finalizers", names)
	f.event(obj, corev1.EventTypeWarning, ReasonDeletedBeforeGuarded,
		"Deleted before finalizers %v were added; their cleanup will not run", names)
}

func (f *Finalizers) event(obj client.Object, eventType, reason, note string, args ...any) {
	if f.recorder == nil {
		return
	}
	f.recorder.Eventf(obj, nil, eventType, reason, "Finalize", note, args...)
}

// boundedSet is a bounded set: when full, the oldest half is forgotten.
type boundedSet[K comparable] struct {
	mu    sync.Mutex
	limit int
	order []K
	set   map[K]struct{}
}

type (
	uidSet = boundedSet[types.UID]
	keySet = boundedSet[inProgressKey]
)

func newUIDSet(limit int) *uidSet { return &uidSet{limit: limit, set: map[types.UID]struct{}{}} }

func newKeySet(limit int) *keySet { return &keySet{limit: limit, set: map[inProgressKey]struct{}{}} }

// add inserts uid and reports whether it was new.
func (s *boundedSet[K]) add(uid K) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[uid]; ok {
		return false
	}
	if len(s.order) >= s.limit {
		for _, old := range s.order[:s.limit/2] {
			delete(s.set, old)
		}
		s.order = slices.Delete(s.order, 0, s.limit/2)
	}
	s.order = append(s.order, uid)
	s.set[uid] = struct{}{}
	return true
}

// remove forgets uid; its slot in order is reclaimed when the set is next
// trimmed.
func (s *boundedSet[K]) remove(uid K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.set, uid)
}

func (s *boundedSet[K]) has(uid K) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[uid]
	return ok
}
