/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bucketapi_test

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/teardown-dev/teardown/examples/kubebuilder-operator/bucketapi"
)

// TestClientAgainstServer pins down the API contract the controller relies
// on: create and delete are idempotent, deleting a missing bucket says
// ErrNotFound, and an injected outage fails deletes without deleting.
func TestClientAgainstServer(t *testing.T) {
	type step struct {
		op          string // create, delete, fail-deletes
		n           int    // for fail-deletes
		wantCreated bool
		wantErr     error // errors.Is target; errAny for any error
	}
	errAny := errors.New("any error")
	tests := []struct {
		name       string
		steps      []step
		wantExists bool
		wantStats  bucketapi.Stats
	}{
		{
			name:       "create twice makes one bucket",
			steps:      []step{{op: "create", wantCreated: true}, {op: "create", wantCreated: false}},
			wantExists: true,
			wantStats:  bucketapi.Stats{CreateCalls: 2, Creates: 1},
		},
		{
			name:      "delete then delete again says not found",
			steps:     []step{{op: "create", wantCreated: true}, {op: "delete"}, {op: "delete", wantErr: bucketapi.ErrNotFound}},
			wantStats: bucketapi.Stats{CreateCalls: 1, Creates: 1, DeleteCalls: 2, Deletes: 1},
		},
		{
			name: "an outage fails deletes until it ends",
			steps: []step{
				{op: "create", wantCreated: true},
				{op: "fail-deletes", n: 2},
				{op: "delete", wantErr: errAny},
				{op: "delete", wantErr: errAny},
				{op: "delete"},
			},
			wantStats: bucketapi.Stats{CreateCalls: 1, Creates: 1, DeleteCalls: 3, Deletes: 1, FailedDeletes: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := bucketapi.NewServer()
			ts := httptest.NewServer(srv)
			defer ts.Close()
			c := bucketapi.NewClient(ts.URL, ts.Client())
			for i, s := range tt.steps {
				var err error
				switch s.op {
				case "create":
					var created bool
					created, err = c.Create(t.Context(), "b")
					if created != s.wantCreated {
						t.Errorf("step %d: created = %t, want %t", i, created, s.wantCreated)
					}
				case "delete":
					err = c.Delete(t.Context(), "b")
				case "fail-deletes":
					srv.FailNextDeletes(s.n)
				}
				switch {
				case s.wantErr == nil && err != nil:
					t.Errorf("step %d %s: %v", i, s.op, err)
				case errors.Is(s.wantErr, errAny) && err == nil:
					t.Errorf("step %d %s: no error, want one", i, s.op)
				case s.wantErr != nil && !errors.Is(s.wantErr, errAny) && !errors.Is(err, s.wantErr):
					t.Errorf("step %d %s: got %v, want %v", i, s.op, err, s.wantErr)
				}
			}
			exists, err := c.Exists(t.Context(), "b")
			if err != nil {
				t.Fatal(err)
			}
			if exists != tt.wantExists {
				t.Errorf("exists = %t, want %t", exists, tt.wantExists)
			}
			if diff := cmp.Diff(tt.wantStats, srv.Stats("b")); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStartRefusesNonLoopback keeps the fake API off the network.
func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:80"} {
		if _, err := bucketapi.NewServer().Start(t.Context(), addr); err == nil {
			t.Errorf("Start(%q) succeeded, want a refusal", addr)
		}
	}
	url, err := bucketapi.NewServer().Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start on loopback: %v", err)
	}
	if _, err := bucketapi.NewClient(url, nil).Create(t.Context(), "b"); err != nil {
		t.Errorf("creating a bucket on the started server: %v", err)
	}
}
