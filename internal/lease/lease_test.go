/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lease

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a leader-election lock whose writes fail while err is set.
type fakeLock struct {
	resourcelock.Interface
	err error
}

func (l *fakeLock) Identity() string { return "me" }
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.err
}
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	return l.err
}

// TestGate: writes are allowed only within the bound of the last renewal
// this replica made, and never before the first or after a release; the
// epoch is the Lease's transitions as this replica wrote them.
func TestGate(t *testing.T) {
	const bound = 10 * time.Second
	held := resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaderTransitions: 4}
	type write struct {
		after  time.Duration // since the start
		create bool
		rec    resourcelock.LeaderElectionRecord
		err    error
	}
	cases := map[string]struct {
		writes    []write
		at        time.Duration // when Allow is asked, since the start
		wantAllow bool
		wantEpoch int64
	}{
		"never renewed":                {at: time.Second},
		"created just now":             {writes: []write{{create: true, rec: resourcelock.LeaderElectionRecord{HolderIdentity: "me"}}}, at: time.Second, wantAllow: true},
		"renewed within the bound":     {writes: []write{{rec: held}}, at: bound - time.Millisecond, wantAllow: true, wantEpoch: 4},
		"renewed a bound ago":          {writes: []write{{rec: held}}, at: bound, wantEpoch: 4},
		"paused past the lease":        {writes: []write{{rec: held}}, at: time.Minute, wantEpoch: 4},
		"renewed again":                {writes: []write{{rec: held}, {after: 8 * time.Second, rec: held}}, at: 15 * time.Second, wantAllow: true, wantEpoch: 4},
		"failed renewals do not count": {writes: []write{{rec: held}, {after: 8 * time.Second, rec: held, err: errors.New("conflict")}}, at: 15 * time.Second, wantEpoch: 4},
		"released":                     {writes: []write{{rec: held}, {after: time.Second, rec: resourcelock.LeaderElectionRecord{LeaderTransitions: 4}}}, at: 2 * time.Second, wantEpoch: 4},
		"another holder written":       {writes: []write{{rec: held}, {after: time.Second, rec: resourcelock.LeaderElectionRecord{HolderIdentity: "other", LeaderTransitions: 5}}}, at: 2 * time.Second, wantEpoch: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			now := start
			g := NewGate(bound)
			g.now = func() time.Time { return now }
			fl := &fakeLock{}
			l := g.Lock(fl, func(context.Context) (string, error) { return "lease-uid", nil })
			for _, w := range tc.writes {
				now = start.Add(w.after)
				fl.err = w.err
				var err error
				if w.create {
					err = l.Create(t.Context(), w.rec)
				} else {
					err = l.Update(t.Context(), w.rec)
				}
				if !errors.Is(err, w.err) {
					t.Fatalf("write: %v, want %v", err, w.err)
				}
			}
			now = start.Add(tc.at)
			if err := g.Allow(); (err == nil) != tc.wantAllow || err != nil && !errors.Is(err, ErrNotLeading) {
				t.Errorf("Allow() = %v, want allowed %v", err, tc.wantAllow)
			}
			want := Epoch{}
			if tc.wantEpoch > 0 || tc.wantAllow {
				want = Epoch{Lease: "lease-uid", Transitions: tc.wantEpoch}
			}
			if got := g.Epoch(); got != want {
				t.Errorf("Epoch() = %+v, want %+v", got, want)
			}
		})
	}
	var none *Gate
	if err := none.Allow(); err != nil || none.Epoch() != (Epoch{}) {
		t.Errorf("no gate: Allow() = %v, Epoch() = %+v; want nil, none", err, none.Epoch())
	}
}

// TestEpochOrder: leaderships are ordered only within one Lease.
func TestEpochOrder(t *testing.T) {
	cases := []struct {
		a, b Epoch
		want bool
	}{
		{Epoch{"u", 1}, Epoch{"u", 2}, true},
		{Epoch{"u", 2}, Epoch{"u", 1}, false},
		{Epoch{"u", 2}, Epoch{"u", 2}, false},
		{Epoch{"u", 1}, Epoch{"v", 5}, false}, // the Lease was deleted and created again
		{Epoch{}, Epoch{"u", 5}, false},       // no leader election
		{Epoch{"u", 5}, Epoch{}, false},
	}
	for _, tc := range cases {
		if got := tc.a.Before(tc.b); got != tc.want {
			t.Errorf("%+v.Before(%+v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestLeaseUIDIsReadOncePerAcquisition: the UID is read when the replica
// acquires the Lease, not at every renewal; until it is read, the gate
// stays closed.
func TestLeaseUIDIsReadOncePerAcquisition(t *testing.T) {
	g := NewGate(time.Hour)
	reads := 0
	fail := true
	l := g.Lock(&fakeLock{}, func(context.Context) (string, error) {
		reads++
		if fail {
			return "", errors.New("unavailable")
		}
		return "lease-uid", nil
	})
	held := resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaderTransitions: 2}
	if err := l.Update(t.Context(), held); err == nil {
		t.Fatal("acquired without the Lease's UID")
	}
	if err := g.Allow(); err == nil {
		t.Error("the gate opened without the Lease's UID")
	}
	fail = false
	for range 3 {
		if err := l.Update(t.Context(), held); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Allow(); err != nil {
		t.Errorf("Allow() = %v after acquiring", err)
	}
	if reads != 2 {
		t.Errorf("the UID was read %d times, want 2 (a failed read, then once)", reads)
	}
	held.LeaderTransitions = 3 // acquired again
	if err := l.Update(t.Context(), held); err != nil || reads != 3 || g.Epoch() != (Epoch{"lease-uid", 3}) {
		t.Errorf("a new acquisition: err %v, reads %d, epoch %+v", err, reads, g.Epoch())
	}
}

// TestWrites: every request that changes state is fenced, reviews are not.
func TestWrites(t *testing.T) {
	cases := []struct {
		method, path string
		want         bool
	}{
		{http.MethodGet, "/api/v1/namespaces/a/configmaps/b", false},
		{"WATCH", "/api/v1/configmaps", false},
		{http.MethodPatch, "/api/v1/namespaces/a/configmaps/b", true},
		{http.MethodPut, "/apis/teardown.dev/v1alpha1/namespaces/a/teardownpolicies/p/status", true},
		{http.MethodPost, "/apis/batch/v1/namespaces/a/jobs", true},
		{http.MethodDelete, "/apis/apps/v1/namespaces/a/daemonsets/d", true},
		{http.MethodPost, "/api/v1/namespaces/a/events", true},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", false},
	}
	for _, tc := range cases {
		if got := Writes(tc.method, tc.path); got != tc.want {
			t.Errorf("Writes(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// TestFenceRefusesWrites: a fenced config's requests reach the server only
// while the gate allows writes, and reads always do.
func TestFenceRefusesWrites(t *testing.T) {
	g := NewGate(time.Hour)
	var sent []string
	rt := roundTripper(func(req *http.Request) (*http.Response, error) {
		sent = append(sent, req.Method)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	f := &fenced{rt: rt, gate: g}
	do := func(method string) error {
		req, err := http.NewRequest(method, "https://api/api/v1/namespaces/a/configmaps/b", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := f.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := do(http.MethodPatch); !errors.Is(err, ErrNotLeading) {
		t.Errorf("PATCH before leading: %v, want ErrNotLeading", err)
	}
	if err := do(http.MethodGet); err != nil {
		t.Errorf("GET before leading: %v", err)
	}
	if err := g.Lock(&fakeLock{}, func(context.Context) (string, error) { return "lease-uid", nil }).Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := do(http.MethodPatch); err != nil {
		t.Errorf("PATCH while leading: %v", err)
	}
	if want := []string{http.MethodGet, http.MethodPatch}; len(sent) != 2 || sent[0] != want[0] || sent[1] != want[1] {
		t.Errorf("sent %v, want %v", sent, want)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
