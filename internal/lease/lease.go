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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	epoch   Epoch
}

// Epoch names a leadership: the Lease (its UID: a Lease deleted and
// created again starts its transitions from 0) and its leaderTransitions
// when this replica acquired it, which grow with every acquisition.
type Epoch struct {
	Lease       string
	Transitions int64
}

// Before reports whether e is an older leadership of the same Lease than o.
// Leaderships of different Leases (or of none: no leader election) are not
// ordered.
func (e Epoch) Before(o Epoch) bool {
	return e.Lease != "" && e.Lease == o.Lease && e.Transitions < o.Transitions
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

// Epoch is the leadership this replica writes under; the zero Epoch
// without a Gate.
func (g *Gate) Epoch() Epoch {
	if g == nil {
		return Epoch{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch
}

// renewedAt records a successful write of the lease record ler, sent at
// sent, by identity, to the Lease whose UID is lease.
func (g *Gate) renewedAt(sent time.Time, ler resourcelock.LeaderElectionRecord, identity, lease string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ler.HolderIdentity != identity || identity == "" {
		// Released (an empty holder): no more writes.
		g.leading = false
		return
	}
	g.leading, g.renewed, g.epoch = true, sent, Epoch{Lease: lease, Transitions: int64(ler.LeaderTransitions)}
}

// current returns the epoch the Gate holds and whether it leads.
func (g *Gate) current() (Epoch, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch, g.leading
}

// Lock wraps the leader-election lock, so that the Gate learns of every
// renewal (client-go's elector exposes no renew time). uid returns the
// Lease's UID; nil reads it from a *resourcelock.LeaseLock's client.
func (g *Gate) Lock(l resourcelock.Interface, uid func(context.Context) (string, error)) resourcelock.Interface {
	if uid == nil {
		uid = leaseUID(l)
	}
	return &lock{Interface: l, gate: g, uid: uid}
}

// leaseUID reads the UID of a LeaseLock's Lease; another lock has none.
func leaseUID(l resourcelock.Interface) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		ll, ok := l.(*resourcelock.LeaseLock)
		if !ok {
			return "", nil
		}
		lease, err := ll.Client.Leases(ll.LeaseMeta.Namespace).Get(ctx, ll.LeaseMeta.Name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading the UID of Lease %s/%s: %w", ll.LeaseMeta.Namespace, ll.LeaseMeta.Name, err)
		}
		return string(lease.UID), nil
	}
}

type lock struct {
	resourcelock.Interface
	gate *Gate
	uid  func(context.Context) (string, error)
}

// Create and Update count from before the request is sent: the lease the API
// server stores runs from then at the latest, as the elector's RenewTime does.
func (l *lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.gate.now()
	if err := l.Interface.Create(ctx, ler); err != nil {
		return err
	}
	return l.renewed(ctx, sent, ler)
}

func (l *lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := l.gate.now()
	if err := l.Interface.Update(ctx, ler); err != nil {
		return err
	}
	return l.renewed(ctx, sent, ler)
}

// renewed tells the Gate of a successful write. The Lease's UID is read
// once per acquisition; until it is known, the Gate stays closed (the
// write is reported failed, and the elector tries again).
func (l *lock) renewed(ctx context.Context, sent time.Time, ler resourcelock.LeaderElectionRecord) error {
	lease := ""
	if epoch, leading := l.gate.current(); leading && epoch.Transitions == int64(ler.LeaderTransitions) {
		lease = epoch.Lease
	} else if ler.HolderIdentity == l.Identity() {
		var err error
		if lease, err = l.uid(ctx); err != nil {
			return err
		}
	}
	l.gate.renewedAt(sent, ler, l.Identity(), lease)
	return nil
}
