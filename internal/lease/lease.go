/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package lease fences a replica's writes to its leadership: the Gate knows
// when this replica last renewed the leader-election Lease, and refuses
// every write once the lease may have passed to another replica, and it
// names the leadership (the epoch: the Lease's leaderTransitions when this
// replica acquired it) in the records the controller writes, so that a
// replica resumed after a pause cannot overwrite what a newer leader wrote.
//
// Leader election alone does not fence writes: a replica stopped past its
// lease (a GC pause, a frozen VM, SIGSTOP) resumes believing it leads, with
// its caches and decisions of before, until its next renewal fails. The
// Gate closes on the replica's own monotonic clock, without asking anyone,
// RenewDeadline after its last successful renewal: by then client-go's
// elector has given up the lease itself, and another replica may take it
// only LeaseDuration after it last saw a renewal.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrNotLeading is the error of a write the Gate refused.
var ErrNotLeading = errors.New("this replica does not hold the leader-election lease, or may have lost it: write refused")

// Gate says whether this replica may write now, and under which epoch. A
// nil Gate (no leader election: one replica, tests) allows every write
// under epoch 0. Its methods are safe for concurrent use.
type Gate struct {
	// bound is how long after a renewal writes are allowed.
	bound time.Duration
	now   func() time.Time

	mu      sync.Mutex
	leading bool
	renewed time.Time // when the last successful renewal was sent
	epoch   int64
}

// NewGate returns a closed Gate that allows writes for bound after each
// renewal its Lock reports; bound must be below the lease's duration
// (client-go's RenewDeadline is).
func NewGate(bound time.Duration) *Gate {
	return &Gate{bound: bound, now: time.Now}
}

// Allow returns nil when this replica renewed the lease less than the bound
// ago (on its monotonic clock), ErrNotLeading otherwise.
func (g *Gate) Allow() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.leading {
		return ErrNotLeading
	}
	if since := g.now().Sub(g.renewed); since >= g.bound {
		return fmt.Errorf("%w (last renewed %s ago, writes stop %s after a renewal)", ErrNotLeading, since.Round(time.Millisecond), g.bound)
	}
	return nil
}

// Epoch is the leadership this replica writes under: the Lease's
// leaderTransitions when it acquired the lease, which grows with every
// acquisition, so a newer leader's epoch is higher. 0 without a Gate.
func (g *Gate) Epoch() int64 {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch
}

// renewedAt records a successful write of the lease record ler, sent at
// sent, by identity.
func (g *Gate) renewedAt(sent time.Time, ler resourcelock.LeaderElectionRecord, identity string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ler.HolderIdentity != identity || identity == "" {
		// Released (an empty holder): no more writes.
		g.leading = false
		return
	}
	g.leading, g.renewed, g.epoch = true, sent, int64(ler.LeaderTransitions)
}

// Lock wraps the leader-election lock, so that the Gate learns of every
// renewal (client-go's elector exposes no renew time).
func (g *Gate) Lock(l resourcelock.Interface) resourcelock.Interface {
	return &lock{Interface: l, gate: g}
}

type lock struct {
	resourcelock.Interface
	gate *Gate
}

// Create and Update count from before the request is sent: the lease the API
// server stores runs from then at the latest, as the elector's RenewTime does.
func (l *lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.gate.now()
	if err := l.Interface.Create(ctx, ler); err != nil {
		return err
	}
	l.gate.renewedAt(sent, ler, l.Identity())
	return nil
}

func (l *lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.gate.now()
	if err := l.Interface.Update(ctx, ler); err != nil {
		return err
	}
	l.gate.renewedAt(sent, ler, l.Identity())
	return nil
}
