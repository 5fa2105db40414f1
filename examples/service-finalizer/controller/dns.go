/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"sync"
	"time"
)

// Registry is the external system the controller keeps in step with
// Services: a DNS provider in this example. Both calls must be idempotent,
// because a controller can repeat any call after a crash or a lost write.
type Registry interface {
	// Register makes name resolve to target. It reports whether the record
	// was created by this call.
	Register(ctx context.Context, name, target string) (created bool, err error)
	// Deregister asks for name to be removed. It reports whether the record
	// is gone; a record that never existed is gone.
	Deregister(ctx context.Context, name string) (gone bool, err error)
}

// FakeDNS is an in-memory Registry that behaves like a real DNS provider:
// removing a record is asynchronous. The first Deregister starts the removal
// and the record is gone once Propagation has passed; calls before that
// report it still there. It counts calls and effects so tests can tell "ran
// again" from "did it again".
type FakeDNS struct {
	propagation time.Duration
	now         func() time.Time

	mu      sync.Mutex
	records map[string]*dnsRecord
	stats   map[string]*DNSStats
}

type dnsRecord struct {
	target   string
	removing time.Time // zero until a Deregister starts the removal
}

// DNSStats counts what happened to one record name.
type DNSStats struct {
	// Registrations counts records created.
	Registrations int
	// DeregisterCalls counts Deregister calls, effective or not.
	DeregisterCalls int
	// Removals counts records actually removed: the effect of a cleanup.
	Removals int
}

// NewFakeDNS returns an empty FakeDNS whose removals take propagation.
func NewFakeDNS(propagation time.Duration) *FakeDNS {
	return &FakeDNS{
		propagation: propagation,
		now:         time.Now,
		records:     map[string]*dnsRecord{},
		stats:       map[string]*DNSStats{},
	}
}

// Register implements Registry.
func (d *FakeDNS) Register(_ context.Context, name, target string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.records[name]; ok {
		r.target = target
		return false, nil
	}
	d.records[name] = &dnsRecord{target: target}
	d.statsFor(name).Registrations++
	return true, nil
}

// Deregister implements Registry.
func (d *FakeDNS) Deregister(_ context.Context, name string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.statsFor(name)
	s.DeregisterCalls++
	r, ok := d.records[name]
	if !ok {
		return true, nil
	}
	now := d.now()
	if r.removing.IsZero() {
		r.removing = now
	}
	if now.Sub(r.removing) < d.propagation {
		return false, nil
	}
	delete(d.records, name)
	s.Removals++
	return true, nil
}

// Lookup returns the target of name, if the record exists (removal under
// way included).
func (d *FakeDNS) Lookup(name string) (target string, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.records[name]
	if !ok {
		return "", false
	}
	return r.target, true
}

// Stats returns the counts for name.
func (d *FakeDNS) Stats(name string) DNSStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return *d.statsFor(name)
}

func (d *FakeDNS) statsFor(name string) *DNSStats {
	s, ok := d.stats[name]
	if !ok {
		s = &DNSStats{}
		d.stats[name] = s
	}
	return s
}
