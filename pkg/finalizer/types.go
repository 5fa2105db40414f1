/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// Handler runs the cleanup guarded by one finalizer. It is called only for
// objects that are being deleted and still carry the finalizer.
//
// Handlers must be idempotent: the same cleanup can run again after a crash,
// a timeout or a lost write. The context is cancelled when the attempt's
// timeout expires; a handler that ignores it is abandoned (its result is
// discarded) and the attempt counts as a Retry.
type Handler interface {
	Finalize(ctx context.Context, obj client.Object) Result
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, obj client.Object) Result

// Finalize calls f.
func (f HandlerFunc) Finalize(ctx context.Context, obj client.Object) Result { return f(ctx, obj) }

// State is what a handler says about its cleanup. It is defined in package
// record, which reads progress records without controller-runtime.
type State = record.State

const (
	// StateDone means the cleanup is complete: the finalizer is removed.
	StateDone = record.StateDone
	// StatePending means the cleanup is under way: the finalizer stays and the
	// object is checked again after Result.After.
	StatePending = record.StatePending
	// StateRetry means the attempt failed: the finalizer stays and the attempt is
	// retried with backoff.
	StateRetry = record.StateRetry
	// StateRelease means the handler gives up on purpose: the finalizer is
	// removed without the cleanup, and the reason is recorded.
	StateRelease = record.StateRelease
)

// Result is a handler's answer. Build it with Done, Pending, Retry or Release.
type Result struct {
	State State
	// After is when to check again, for Pending.
	After time.Duration
	// Reason says why, for Pending and Release; it is shown in Events and in
	// the progress annotation.
	Reason string
	// Err is the failure, for Retry.
	Err error

	cause string // why a Release happened when not by the handler: "deadline" or the caller's
}

// CleanupError is the error Reconcile returns when a handler answered Retry:
// the cleanup itself failed, as opposed to the API server refusing or
// missing a write. Callers may back off the two differently.
type CleanupError struct {
	Finalizer string
	Object    string
	Err       error
}

func (e *CleanupError) Error() string {
	return fmt.Sprintf("cleanup %q of %s: %v", e.Finalizer, e.Object, e.Err)
}

func (e *CleanupError) Unwrap() error { return e.Err }

// Done says the cleanup is complete.
func Done() Result { return Result{State: StateDone} }

// Pending says the cleanup is under way and should be checked again after d.
func Pending(d time.Duration, reason string) Result {
	return Result{State: StatePending, After: d, Reason: reason}
}

// Retry says the attempt failed with err and should be retried with backoff.
func Retry(err error) Result {
	if err == nil {
		err = errors.New("handler asked for a retry without an error")
	}
	return Result{State: StateRetry, Err: err, Reason: err.Error()}
}

// RetryAfter says the attempt failed with err and the handler itself chose
// when to try again: after d. It is a Retry (recorded and said as a failure)
// without the caller's backoff; the handler keeps its own, for example
// because its attempts finish outside Reconcile, where a successful
// Reconcile in between would reset the work queue's.
func RetryAfter(err error, d time.Duration) Result {
	res := Retry(err)
	res.After = d
	return res
}

// Release gives up on the cleanup on purpose: the finalizer is removed and
// reason is recorded in an Event, a metric and the log.
func Release(reason string) Result { return Result{State: StateRelease, Reason: reason} }

func (r Result) String() string {
	switch r.State {
	case StatePending:
		return fmt.Sprintf("%s (check again in %s): %s", r.State, r.After, r.Reason)
	case StateRetry, StateRelease:
		return fmt.Sprintf("%s: %s", r.State, r.Reason)
	default:
		return string(r.State)
	}
}

// Attach says when a finalizer is put on an object.
type Attach string

const (
	// AttachAutomatic adds the finalizer to every object the Finalizers sees
	// that is not being deleted.
	AttachAutomatic Attach = "Automatic"
	// AttachDeclared never adds the finalizer: the handler runs only for objects
	// created with it, for example declared in their manifest.
	AttachDeclared Attach = "Declared"
)

// Expiry says what happens when a finalizer's deadline passes.
type Expiry string

const (
	// ExpiryBlock keeps the finalizer and keeps running the handler; a Warning
	// Event says the deadline passed. This is the default.
	ExpiryBlock Expiry = "Block"
	// ExpiryRelease removes the finalizer without the cleanup, with a Warning
	// Event and a record of what was skipped.
	ExpiryRelease Expiry = "Release"
)

// Outcome is what Reconcile did and what the caller should do next.
type Outcome struct {
	// Proceed is true when the object is not being deleted and every
	// automatically attached finalizer is observed on it: the caller may run
	// its normal reconcile and create external state. When false, the caller
	// returns Result().
	Proceed bool
	// Added lists the finalizers this call added. The caller must return and
	// act only once it observes them on the object (a watch event follows the
	// write).
	Added []string
	// Removed lists the finalizers this call removed, Released included.
	Removed []string
	// Released lists the finalizers removed without their cleanup, by a
	// handler's Release or an expired deadline.
	Released []string
	// RequeueAfter is set when a handler is pending.
	RequeueAfter time.Duration
	// Refused is set (a RefusedError) when the API server refused to
	// record the cleanup's progress on the object being deleted: the
	// object stays held, and nothing on it says why.
	Refused error
}

// Result converts the outcome into a controller-runtime result.
func (o Outcome) Result() reconcile.Result { return reconcile.Result{RequeueAfter: o.RequeueAfter} }
