/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/queuekey"
)

// DefaultWebhookCallsPerTenant is how many webhook calls one tenant (the
// namespace of a TeardownPolicy; each ClusterTeardownPolicy on its own) has
// in flight at most, by default.
const DefaultWebhookCallsPerTenant = 8

// answerKept is how long an answer nobody collected is kept: its cleanup
// ended otherwise (deadline, release, the object went) or moved on.
const answerKept = 10 * time.Minute

// RetryBase and RetryMax are how a failing cleanup is retried, per object:
// from RetryBase, doubling, at most RetryMax (docs/controller.md). The
// guarded objects' work queue backs off so; a webhook call, which fails
// outside the worker, is held back so by WebhookCalls.
const (
	RetryBase = 5 * time.Millisecond
	RetryMax  = 30 * time.Second
)

// slotRecheck is how soon a tenant's queue of cleanups waiting for a call
// slot is looked at again after a wake that may not have taken the slot (the
// woken cleanup ended, or its object went).
const slotRecheck = 5 * time.Second

// WebhookCalls runs webhook calls off the workers every tenant shares: a
// step starts its call here and answers pending at once; the call runs in
// its own goroutine, bounded by its timeout, and its answer wakes the
// object's cleanup, whose next run collects it. A receiver that accepts
// calls and never answers holds a tenant's call slots, never a worker.
//
// Each tenant has at most Limit calls in flight; a cleanup that finds its
// tenant's slots taken waits, first come first served within the tenant,
// and is woken when a slot frees.
//
// A call that failed is not made again before its backoff (RetryBase,
// doubling per failure in a row, at most RetryMax) has passed: the work
// queue's own backoff cannot do it, because the run that starts a call
// succeeds and resets it, so a receiver that refuses at once would be
// called, and its object patched, as fast as the worker can go.
type WebhookCalls struct {
	// Limit is the calls in flight per tenant (DefaultWebhookCallsPerTenant
	// when 0).
	Limit int
	// MaxTimeout bounds a call whose step asks for longer (the attempt
	// timeout a call made by the worker had); 0 leaves the step's.
	MaxTimeout time.Duration
	// Wake queues the cleanup of targets.
	Wake func(context.Context, ...queuekey.Request)
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu       sync.Mutex
	calls    map[callKey]*call
	inFlight map[string]int
	// waiting lists per tenant the cleanups waiting for a slot, in order.
	waiting   map[string][]queuekey.Request
	rechecks  map[string]bool
	lastSweep time.Time
	// failing holds the last failed answer of each call that failed, and
	// when it may be made again; backoff counts its failures in a row.
	failing map[callKey]heldCall
	backoff workqueue.TypedRateLimiter[callKey]
}

// heldCall is a failed call's answer and when it may be made again.
type heldCall struct {
	out   outcome
	until time.Time
}

// callKey names one call: one step of one policy version for one object
// under one key. An answer to another version is never taken for this one.
type callKey struct {
	object      types.UID
	policy      types.UID
	fingerprint string
	key         string
	step        string
}

type call struct {
	answered bool
	out      outcome
	at       time.Time // started, then answered
}

// callState is what a cleanup's run finds of its call.
type callState int

const (
	// callNone: no call; start one.
	callNone callState = iota
	// callInFlight: the call has not answered.
	callInFlight
	// callAnswered: the answer is returned, and forgotten here.
	callAnswered
)

func (c *WebhookCalls) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

func (c *WebhookCalls) limit() int {
	if c.Limit <= 0 {
		return DefaultWebhookCallsPerTenant
	}
	return c.Limit
}

// tenantOf is whose share of calls pol's calls take: its namespace for a
// TeardownPolicy, the policy itself for a ClusterTeardownPolicy.
func tenantOf(pol *policy.Policy) string {
	if pol.Ref.Kind == policy.KindNamespaced {
		return "namespace " + pol.Ref.Namespace
	}
	return pol.Ref.String()
}

// collect returns what is known of call k: its answer (forgotten once
// returned), or that it is in flight, or nothing.
func (c *WebhookCalls) collect(k callKey) (outcome, callState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.calls[k]
	switch {
	case !ok:
		return outcome{}, callNone
	case !cl.answered:
		return outcome{}, callInFlight
	}
	delete(c.calls, k)
	return c.heldOut(k, cl.out), callAnswered
}

// heldBack is the last failed answer of call k, to be returned again
// without a call while its backoff runs, or false once the call may be
// made.
func (c *WebhookCalls) heldBack(k callKey) (outcome, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.failing[k]
	if !ok || !c.now().Before(h.until) {
		return outcome{}, false
	}
	return c.heldOut(k, h.out), true
}

// heldOut is out, a failed answer of call k, with the time left before
// the call is made again. Called with mu held.
func (c *WebhookCalls) heldOut(k callKey, out outcome) outcome {
	if h, ok := c.failing[k]; ok && out.err != nil {
		out.after = max(h.until.Sub(c.now()), time.Millisecond)
	}
	return out
}

// start starts call k of tenant for target with do, unless the tenant has
// Limit calls in flight: then target waits for a slot. It reports whether
// the call started, and how many of the tenant's calls are in flight.
func (c *WebhookCalls) start(k callKey, tenant string, target queuekey.Request, timeout time.Duration, do func(context.Context) outcome) (bool, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls, c.inFlight, c.waiting, c.rechecks = map[callKey]*call{}, map[string]int{}, map[string][]queuekey.Request{}, map[string]bool{}
		c.failing, c.backoff = map[callKey]heldCall{}, workqueue.NewTypedItemExponentialFailureRateLimiter[callKey](RetryBase, RetryMax)
	}
	c.sweep()
	if _, ok := c.calls[k]; ok {
		return true, c.inFlight[tenant]
	}
	if c.inFlight[tenant] >= c.limit() {
		if !slices.Contains(c.waiting[tenant], target) {
			c.waiting[tenant] = append(c.waiting[tenant], target)
		}
		return false, c.inFlight[tenant]
	}
	c.waiting[tenant] = slices.DeleteFunc(c.waiting[tenant], func(r queuekey.Request) bool { return r == target })
	if len(c.waiting[tenant]) == 0 {
		delete(c.waiting, tenant)
	}
	c.inFlight[tenant]++
	c.calls[k] = &call{at: c.now()}
	if c.MaxTimeout > 0 && timeout > c.MaxTimeout {
		timeout = c.MaxTimeout
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		out := do(ctx)
		cancel()
		c.finish(k, tenant, target, out)
	}()
	return true, c.inFlight[tenant]
}

// finish records call k's answer, frees its slot and wakes its cleanup and
// the next one waiting for a slot of the tenant.
func (c *WebhookCalls) finish(k callKey, tenant string, target queuekey.Request, out outcome) {
	c.mu.Lock()
	if cl, ok := c.calls[k]; ok {
		cl.answered, cl.out, cl.at = true, out, c.now()
	}
	if out.err != nil {
		c.failing[k] = heldCall{out: out, until: c.now().Add(c.backoff.When(k))}
	} else {
		delete(c.failing, k)
		c.backoff.Forget(k)
	}
	c.inFlight[tenant]--
	if c.inFlight[tenant] <= 0 {
		delete(c.inFlight, tenant)
	}
	wake := append([]queuekey.Request{target}, c.nextWaiting(tenant)...)
	c.mu.Unlock()
	if c.Wake != nil {
		c.Wake(context.Background(), wake...)
	}
}

// nextWaiting takes, for each free slot of tenant, the next cleanup waiting
// for one, and looks again after slotRecheck while some still wait (a woken
// cleanup that does not come back for its slot must not strand the rest).
// Called with mu held.
func (c *WebhookCalls) nextWaiting(tenant string) []queuekey.Request {
	free := c.limit() - c.inFlight[tenant]
	queue := c.waiting[tenant]
	n := min(free, len(queue))
	if n <= 0 {
		return nil
	}
	woken := slices.Clone(queue[:n])
	if rest := queue[n:]; len(rest) > 0 {
		c.waiting[tenant] = rest
		if !c.rechecks[tenant] {
			c.rechecks[tenant] = true
			time.AfterFunc(slotRecheck, func() { c.recheck(tenant) })
		}
	} else {
		delete(c.waiting, tenant)
	}
	return woken
}

func (c *WebhookCalls) recheck(tenant string) {
	c.mu.Lock()
	delete(c.rechecks, tenant)
	wake := c.nextWaiting(tenant)
	c.mu.Unlock()
	if c.Wake != nil && len(wake) > 0 {
		c.Wake(context.Background(), wake...)
	}
}

// sweep forgets answers nobody collected within answerKept, at most once a
// minute. Called with mu held.
func (c *WebhookCalls) sweep() {
	now := c.now()
	if now.Sub(c.lastSweep) < time.Minute {
		return
	}
	c.lastSweep = now
	for k, cl := range c.calls {
		if cl.answered && now.Sub(cl.at) > answerKept {
			delete(c.calls, k)
		}
	}
	for k, h := range c.failing {
		if now.Sub(h.until) > answerKept {
			delete(c.failing, k)
			c.backoff.Forget(k)
		}
	}
}

// callOf is the key of the call step of pol makes for t under key.
func callOf(pol *policy.Policy, key, step string, t Object) callKey {
	return callKey{object: t.Obj.GetUID(), policy: pol.UID, fingerprint: pol.Fingerprint, key: key, step: step}
}

// awaiting is the pending outcome of a step whose call is in flight or
// waits for a slot: no requeue, since the answer (or a free slot) wakes it,
// and a requeue time would hold that wake back (see stepWatch.finish).
func awaiting(format string, args ...any) outcome {
	return outcome{message: fmt.Sprintf(format, args...)}
}
