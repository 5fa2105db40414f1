/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package steps runs a policy's cleanup steps (webhook, job, delete, wait,
// unused) for one target object, in order, as the handler of the policy's
// finalizer.
//
// Only a definitive failure of a step lets its onFailure act: the webhook
// answered Failure (or a permanent 4xx, or a redirect), the Job reached
// Failed, or the step's timeout passed. Every other error (connection
// errors, 5xx, API errors, stale REST mappings, a Job that could not be
// read, a condition that could not be evaluated) is transient and retried
// whatever onFailure says, until the step succeeds, its timeout passes or
// the policy's deadline acts.
//
// Every step kind is one entry of kinds.go and one file (webhook*.go, job.go,
// resources.go for delete and wait, unused*.go). The package is about 3,600
// lines, over the ~3,000 a package is kept under, because the webhook step
// carries its own egress guard (webhook_dial.go, webhook_dns.go,
// webhook_proxy.go: where a policy may send a request, checked at every
// dial) and two signing schemes, 1,200 lines that only that step uses and
// that share its types; they are the part to move into a package of their
// own when the step grows again.
package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/lease"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/waits"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// pollInterval is how soon a pending step is checked again when it says
// nothing better.
const pollInterval = 2 * time.Second

// maxRetryAfter caps how long a webhook may ask to be left alone (Retry-After,
// retryAfterSeconds): a receiver's typo or a hostile answer must not park a
// cleanup for days.
const maxRetryAfter = 10 * time.Minute

// Runner runs steps. Client writes (Jobs, deletes, the state annotation);
// Reader lists step resources straight from the API server, so that steps do
// not start cluster-wide informers for every kind they mention.
type Runner struct {
	Client client.Client
	Reader client.Reader
	// Records reads the step records as proven by their keys (state.go);
	// the zero Records, without keys, seals nothing and checks no seal.
	Records Records
	// Identities gives each policy's steps their identity (identity.go);
	// nil means every step acts as the controller (Client, Reader).
	Identities *Identities
	Mapper     meta.RESTMapper
	HTTP       *HTTPClients
	// Calls runs webhook calls off the workers, with a bound per tenant
	// (webhook_calls.go); nil makes each call in the step's run.
	Calls *WebhookCalls
	// reads shares and bounds what wait steps read (wait_read.go).
	reads waitReads
	// Waits wakes pending wait and delete steps when what they wait on
	// changes (internal/waits); nil means they poll.
	Waits *waits.Registry
	// Uses tells unused steps which pods use their target; nil fails them.
	Uses           UsesIndex
	unusedMessages unusedMessages
	// UnusedGrace is how long after its deletion an unused step's target
	// is confirmed unused at the earliest, when the in-use webhook runs
	// (unused_confirm.go); 0 confirms at once.
	UnusedGrace time.Duration
	// Coverage narrows the in-use webhook to the namespaces unused steps
	// hold objects in; an unused step confirms no sooner than UnusedGrace
	// after its target's namespace is covered. nil: no webhook.
	Coverage InUseCoverage
	// Waiting, when set, keeps what each pending or failing cleanup waits
	// on, for the controller's diagnosis; nil keeps nothing.
	Waiting *Waiting
	// Lease fences the cleanup to this replica's leadership: no step runs
	// while it refuses writes, and the step records carry its epoch
	// (fence.go); nil (no leader election) fences nothing, epoch 0.
	Lease *lease.Gate
	// Starters records, in the policy's status, the teardowns started on
	// objects without room for their step record (starter.go); nil records
	// none.
	Starters *Starters
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (r *Runner) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// Object is the object being torn down: its kind and its metadata.
type Object struct {
	GVK schema.GroupVersionKind
	Obj client.Object
}

// ref names the object, as what a step waits on names objects.
func (t Object) ref() WaitRef {
	return WaitRef{GVK: t.GVK, Namespace: t.Obj.GetNamespace(), Name: t.Obj.GetName()}
}

// FailureKind says what kind of error stopped a step.
type FailureKind string

const (
	// Transient: the step could not be carried out this time (connection
	// error, 5xx, API error, ...). It is retried whatever onFailure says.
	Transient FailureKind = "Transient"
	// Failed: the step failed definitively (webhook Failure or permanent 4xx,
	// Job Failed); onFailure applies.
	Failed FailureKind = "Failed"
	// TimedOut: the step's timeout passed; onFailure applies. Shown with
	// reason StepTimedOut.
	TimedOut FailureKind = "TimedOut"
)

// StepError is the error of a step that did not finish. It wraps the
// underlying error, so callers can inspect the chain (apierrors, net errors)
// with errors.As / errors.Is; its message starts with the step and the kind
// ("transient:", "failed:", "timed out ..."), so status and Events tell them
// apart.
type StepError struct {
	Step  string
	Index int
	// Action is the step's kind. A network error under a webhook step is
	// about the receiver, not the API server.
	Action Action
	Kind   FailureKind
	Err    error
}

func (e *StepError) Error() string {
	switch e.Kind {
	case Transient:
		return fmt.Sprintf("step %s: transient: %v", e.Step, e.Err)
	case TimedOut:
		return fmt.Sprintf("step %s: %v", e.Step, e.Err) // Err says "timed out after ..."
	default:
		return fmt.Sprintf("step %s: failed: %v", e.Step, e.Err)
	}
}

func (e *StepError) Unwrap() error { return e.Err }

// Definitive reports whether the error is one onFailure acts on.
func (e *StepError) Definitive() bool { return e.Kind == Failed || e.Kind == TimedOut }

// outcome is what one step says.
type outcome struct {
	done       bool
	after      time.Duration // pending: check again after
	message    string        // pending or error: why
	err        error         // the step did not finish with an error
	definitive bool          // err is a definitive failure of the step
	timedOut   bool          // the step's timeout passed
	waitsOn    []WaitRef     // pending: what the step waits on (waitingOn)
}

func done() outcome { return outcome{done: true} }

func pending(after time.Duration, format string, args ...any) outcome {
	if after <= 0 {
		after = pollInterval
	}
	return outcome{after: after, message: fmt.Sprintf(format, args...)}
}

// failed is a definitive failure: onFailure applies.
func failed(err error) outcome { return outcome{err: err, message: err.Error(), definitive: true} }

// transient is an error that says nothing about the cleanup itself: retried.
func transient(err error) outcome { return outcome{err: err, message: err.Error()} }

// Run runs pol's steps for t from the recorded one on, and answers the
// finalizer protocol for key, the finalizer key the cleanup runs under (the
// policy's current key, or an older key an earlier version attached); the
// state annotation is key's.
//
// Progress is recorded after each finished step that more steps follow, and
// when the cleanup stops early (pending or retry), so that a restart never
// repeats a finished step; a cleanup that finishes in one go after its last
// step writes nothing more.
func (r *Runner) Run(ctx context.Context, pol *policy.Policy, key string, t Object) finalizer.Result {
	log := logf.FromContext(ctx).WithValues("policy", pol.Ref.String(), "finalizer", key, "target", klog.KObj(t.Obj))
	if err := r.Lease.Allow(); err != nil {
		return finalizer.Retry(err)
	}
	// One read of the record (its seal checked once) gives where the
	// cleanup stands, what the writes test against, and whether a writer
	// ahead of this one holds it.
	bound, isBound := r.Records.bound(t.Obj, key)
	recorded, ok := bound.of(pol, isBound)
	pos := position(t.Obj, pol, recorded, ok, r.now())
	i, since := pos.Index, pos.Since
	if !isBound && len(pol.Steps) > 0 && noRoomFor(t.Obj, key) {
		// No step record will fit: who started the teardown is recorded
		// in the policy's status before any step runs.
		if err := r.Starters.Record(ctx, pol, key, t); err != nil {
			return startersFailed(err)
		}
	}
	if res, stop := r.claim(ctx, pol, key, t, bound, isBound, &recorded, i, since); stop {
		return res
	}
	for i < len(pol.Steps) {
		step := pol.Steps[i]
		if since.IsZero() {
			since = r.now()
		}
		if err := r.Lease.Allow(); err != nil {
			return finalizer.Retry(err)
		}
		out := r.runStep(ctx, pol, key, i, t)
		if !out.done && !out.definitive && step.Timeout != nil && step.Timeout.Duration > 0 {
			if waited := r.now().Sub(since); waited > step.Timeout.Duration {
				// Time spent on transient errors counts: the timeout is the
				// step's bound on the whole, not on its successful calls.
				err := fmt.Errorf("timed out after %s: %s", step.Timeout.Duration, out.message)
				if out.err != nil {
					err = fmt.Errorf("timed out after %s: %w", step.Timeout.Duration, out.err)
				}
				out = outcome{err: err, message: err.Error(), definitive: true, timedOut: true}
			}
		}
		var stepErr *StepError
		if out.err != nil {
			stepErr = &StepError{Step: step.Name, Index: i, Action: ActionOf(step.Step), Kind: Transient, Err: out.err}
			switch {
			case out.timedOut:
				stepErr.Kind = TimedOut
			case out.definitive:
				stepErr.Kind = Failed
			}
		}
		switch {
		case out.done:
			log.V(2).Info("Cleanup step done", "step", step.Name)
			var err error
			if i, since, err = r.next(ctx, pol, key, t, &recorded, i); err != nil {
				return fenced(err)
			}
			continue
		case stepErr == nil:
			if err := r.saveState(ctx, pol, key, t, &recorded, i, since); err != nil {
				return fenced(err)
			}
			r.Waiting.set(key, t.Obj.GetUID(), Wait{Target: t.ref(), Policy: pol.Ref, Step: step.Name, Action: ActionOf(step.Step), On: out.waitsOn})
			return finalizer.Pending(out.after, fmt.Sprintf("step %s: %s", step.Name, out.message))
		case stepErr.Kind == Transient:
			log.V(1).Info("Cleanup step hit a transient error; retrying", "step", step.Name, "err", out.err.Error())
			return r.retry(ctx, pol, key, t, &recorded, i, since, stepErr, out.after)
		}
		switch step.OnFailure {
		case teardownv1alpha1.FailureContinue:
			log.Info("Cleanup step failed; continuing as the policy says", "step", step.Name, "kind", stepErr.Kind, "err", stepErr.Error())
			var err error
			if i, since, err = r.next(ctx, pol, key, t, &recorded, i); err != nil {
				return fenced(err)
			}
			continue
		case teardownv1alpha1.FailureRelease:
			log.Info("Cleanup step failed; releasing as the policy says", "step", step.Name, "kind", stepErr.Kind, "err", stepErr.Error())
			r.Waiting.forget(key, t.Obj.GetUID())
			return finalizer.Release(stepErr.Error() + "; its policy says Release")
		default:
			return r.retry(ctx, pol, key, t, &recorded, i, since, stepErr, out.after)
		}
	}
	r.Waiting.forget(key, t.Obj.GetUID())
	return finalizer.Done()
}

// next moves past step i: when more steps follow, the move is recorded
// before the next one starts, so that a restart does not repeat step i.
func (r *Runner) next(ctx context.Context, pol *policy.Policy, key string, t Object, recorded *record, i int) (int, time.Time, error) {
	i++
	if i >= len(pol.Steps) {
		return i, time.Time{}, nil
	}
	since := r.now()
	return i, since, r.saveState(ctx, pol, key, t, recorded, i, since)
}

// claim records, before any step runs, that this writer (its epoch and
// its policy's version) holds the cleanup, where the object carries a
// record another writer wrote (another leader, another version, a record
// of the previous release or a garbled one): from then on that writer's
// writes, which test the record they read, fail. A record ahead of this
// writer (bound, the object's record when isBound) stops the cleanup.
// With no record, or one this writer wrote, nothing is written.
func (r *Runner) claim(ctx context.Context, pol *policy.Policy, key string, t Object, bound record, isBound bool, recorded *record, i int, since time.Time) (finalizer.Result, bool) {
	if _, present := t.Obj.GetAnnotations()[StateAnnotation(key)]; !present || len(pol.Steps) == 0 {
		return finalizer.Result{}, false
	}
	if isBound && ahead(bound, r.Lease.Epoch(), pol) {
		return fenced(superseded(bound, r.Lease.Epoch(), pol)), true
	}
	if since.IsZero() {
		since = r.now()
	}
	if err := r.saveState(ctx, pol, key, t, recorded, i, since); err != nil {
		return fenced(err), true
	}
	return finalizer.Result{}, false
}

// retry records that step i failed with err, for a restart and for the
// diagnosis, and answers Retry: at the step's own time when it has one (a
// webhook call's backoff, webhook_calls.go), else with the work queue's
// backoff.
func (r *Runner) retry(ctx context.Context, pol *policy.Policy, key string, t Object, recorded *record, i int, since time.Time, stepErr *StepError, after time.Duration) finalizer.Result {
	if err := r.saveState(ctx, pol, key, t, recorded, i, since); err != nil {
		return fenced(err)
	}
	r.Waiting.set(key, t.Obj.GetUID(), Wait{Target: t.ref(), Policy: pol.Ref, Step: stepErr.Step, Action: stepErr.Action, Failure: stepErr.Error()})
	if after > 0 {
		return finalizer.RetryAfter(stepErr, after)
	}
	return finalizer.Retry(stepErr)
}

// fenced is the answer of a cleanup whose record write was refused. A
// record that changed since it was read (by this replica's own write its
// cache has not seen yet, most often) is checked again soon; a superseded
// writer, or one whose lease may have passed, retries, and will most
// likely have stopped by then.
func fenced(err error) finalizer.Result {
	switch {
	case errors.Is(err, errRecordRefused):
		// Held until the object has room: its tenant is told by the
		// progress record's refusal (ProgressRefused).
		return finalizer.Pending(refusedRecheck, err.Error())
	case errors.Is(err, errRecordChanged):
		return finalizer.Pending(time.Second, err.Error())
	}
	return finalizer.Retry(err)
}

// refusedRecheck is how soon a teardown whose step record the API server
// refused is tried again.
const refusedRecheck = 10 * time.Second

// startersFailed is the answer of a teardown whose starter could not be
// recorded in its policy's status: no step runs.
func startersFailed(err error) finalizer.Result {
	if isStartersFull(err) {
		return finalizer.Pending(refusedRecheck, err.Error())
	}
	return finalizer.Retry(fmt.Errorf("recording the teardown in the policy's status.startedTeardowns: %w", err))
}

// saveState records step i and since under key, sealed with the runner's
// keys, when that differs from what the object carries (writeRecord). A
// record write that is refused by its test, by a newer writer's record or
// by the lease gate is returned: the
// cleanup must not go on from what it read. Any other failure is not
// fatal: steps are idempotent, and a restart only repeats the steps since
// the last record.
func (r *Runner) saveState(ctx context.Context, pol *policy.Policy, key string, t Object, recorded *record, i int, since time.Time) error {
	rec := record{Object: t.Obj.GetUID(), Policy: pol.UID, Fingerprint: pol.Fingerprint, Step: i, Name: pol.Steps[i].Name,
		Since: since.UTC().Truncate(time.Second), Generation: pol.Generation}
	epoch := r.Lease.Epoch()
	rec.Lease, rec.Epoch = epoch.Lease, epoch.Transitions
	rec, err := rec.sealed(r.Records.Keys, key)
	if err != nil {
		return err
	}
	if rec == *recorded {
		return nil
	}
	if err := r.writeRecord(ctx, pol, key, t, rec); err != nil {
		if errors.Is(err, errRecordRefused) {
			// No room on the object: the policy's status says who started
			// the teardown instead, and it stops here until there is room.
			if serr := r.Starters.Record(ctx, pol, key, t); serr != nil {
				return fmt.Errorf("%w; and %w", err, serr)
			}
			return err
		}
		if errors.Is(err, errRecordChanged) || errors.Is(err, finalizer.ErrSuperseded) || errors.Is(err, lease.ErrNotLeading) {
			return err
		}
		logf.FromContext(ctx).V(1).Info("Could not record the cleanup step", "target", klog.KObj(t.Obj), "step", rec.Name, "err", err.Error())
		return nil
	}
	*recorded = rec
	return nil
}
