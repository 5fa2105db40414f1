/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// registration is what a waiter is registered under.
type registration struct {
	keys []string
	// timer wakes the waiter if nothing else does (Recheck).
	timer *time.Timer
}

// registrationLocked returns w's registration, making an empty one.
func (x *Index) registrationLocked(w Waiter) *registration {
	reg := x.registered[w]
	if reg == nil {
		reg = &registration{}
		x.registered[w] = reg
	}
	return reg
}

// hold registers w under keys.
func (x *Index) hold(w Waiter, keys ...string) {
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	reg := x.registrationLocked(w)
	for _, k := range keys {
		set := x.waiting[k]
		if set == nil {
			set = map[Waiter]struct{}{}
			x.waiting[k] = set
		}
		if _, ok := set[w]; !ok {
			set[w] = struct{}{}
			reg.keys = append(reg.keys, k)
		}
	}
}

// Recheck wakes w after d unless a change wakes it first: the safety net of
// a pending step, which asks for no requeue of its own (pkg/finalizer would
// hold back every wake until a requeue's time).
func (x *Index) Recheck(w Waiter, d time.Duration) {
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	reg := x.registrationLocked(w)
	if reg.timer != nil {
		reg.timer.Stop()
	}
	reg.timer = time.AfterFunc(d, func() {
		x.waitMu.Lock()
		current := x.registered[w] == reg
		if current {
			x.forgetLocked(w)
		}
		x.waitMu.Unlock()
		if current {
			x.wake(x.runContext(), w)
		}
	})
}

// runContext is the context the index runs under; Background before Start.
func (x *Index) runContext() context.Context {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ctx == nil {
		return context.Background()
	}
	return x.ctx
}

// Forget drops every registration of w.
func (x *Index) Forget(w Waiter) {
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	x.forgetLocked(w)
}

func (x *Index) forgetLocked(w Waiter) {
	reg := x.registered[w]
	if reg == nil {
		return
	}
	for _, k := range reg.keys {
		delete(x.waiting[k], w)
		if len(x.waiting[k]) == 0 {
			delete(x.waiting, k)
		}
	}
	if reg.timer != nil {
		reg.timer.Stop()
	}
	delete(x.registered, w)
}

// wakeKeys wakes, and forgets, every waiter under keys.
func (x *Index) wakeKeys(ctx context.Context, keys ...string) {
	var woken []Waiter
	x.waitMu.Lock()
	for _, k := range keys {
		for w := range x.waiting[k] {
			woken = append(woken, w)
			x.forgetLocked(w)
		}
	}
	x.waitMu.Unlock()
	if len(woken) > 0 {
		klog.FromContext(ctx).V(1).Info("A use may have ended; waking the cleanups that wait on it", "keys", keys, "woken", len(woken))
	}
	for _, w := range woken {
		x.wake(ctx, w)
	}
}

// Waiting is how many cleanups are registered, for tests and metrics.
func (x *Index) Waiting() int {
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	return len(x.registered)
}
