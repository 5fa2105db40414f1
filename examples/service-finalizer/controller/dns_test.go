/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFakeDNS pins down the fake provider's contract the controller relies
// on: removal is asynchronous, repeated calls are harmless, and an absent
// record is gone.
func TestFakeDNS(t *testing.T) {
	type call struct {
		at       time.Duration // since the start
		op       string        // register, deregister
		name     string
		wantGone bool
	}
	tests := []struct {
		name      string
		calls     []call
		wantStats DNSStats
	}{
		{
			name: "removal takes the propagation time",
			calls: []call{
				{at: 0, op: "register", name: "a"},
				{at: time.Second, op: "deregister", name: "a", wantGone: false},
				{at: 2 * time.Second, op: "deregister", name: "a", wantGone: false},
				{at: 4 * time.Second, op: "deregister", name: "a", wantGone: true},
				{at: 5 * time.Second, op: "deregister", name: "a", wantGone: true},
			},
			wantStats: DNSStats{Registrations: 1, DeregisterCalls: 4, Removals: 1},
		},
		{
			name:      "a record that never existed is gone",
			calls:     []call{{at: 0, op: "deregister", name: "a", wantGone: true}},
			wantStats: DNSStats{DeregisterCalls: 1},
		},
		{
			name: "registering twice creates one record",
			calls: []call{
				{at: 0, op: "register", name: "a"},
				{at: 0, op: "register", name: "a"},
			},
			wantStats: DNSStats{Registrations: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := start
			d := NewFakeDNS(3 * time.Second)
			d.now = func() time.Time { return now }
			for i, c := range tt.calls {
				now = start.Add(c.at)
				switch c.op {
				case "register":
					if _, err := d.Register(t.Context(), c.name, "10.0.0.1"); err != nil {
						t.Fatalf("call %d: %v", i, err)
					}
				case "deregister":
					gone, err := d.Deregister(t.Context(), c.name)
					if err != nil {
						t.Fatalf("call %d: %v", i, err)
					}
					if gone != c.wantGone {
						t.Errorf("call %d at %s: gone = %t, want %t", i, c.at, gone, c.wantGone)
					}
				}
			}
			if diff := cmp.Diff(tt.wantStats, d.Stats("a")); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}
