/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/queuekey"
)

// fakeCalls is a WebhookCalls whose calls block until released, and which
// records what it wakes.
type fakeCalls struct {
	*WebhookCalls
	mu      sync.Mutex
	woken   []string
	release map[string]chan outcome
	wakes   chan struct{}
}

func newFakeCalls(limit int) *fakeCalls {
	f := &fakeCalls{release: map[string]chan outcome{}, wakes: make(chan struct{}, 100)}
	f.WebhookCalls = &WebhookCalls{Limit: limit, Wake: func(_ context.Context, reqs ...queuekey.Request) {
		f.mu.Lock()
		for _, r := range reqs {
			f.woken = append(f.woken, r.Key().String())
		}
		f.mu.Unlock()
		f.wakes <- struct{}{}
	}}
	return f
}

func objectReq(ns, name string) queuekey.Request {
	return queuekey.For(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, types.NamespacedName{Namespace: ns, Name: name})
}

// start starts the call of object ns/name; the call answers when answer is
// sent.
func (f *fakeCalls) start(ns, name string) bool {
	k := callKey{object: types.UID(ns + "/" + name), key: "k", step: "s"}
	ch := make(chan outcome, 1)
	f.mu.Lock()
	f.release[ns+"/"+name] = ch
	f.mu.Unlock()
	started, _ := f.WebhookCalls.start(k, "namespace "+ns, objectReq(ns, name), time.Minute, func(ctx context.Context) outcome {
		select {
		case out := <-ch:
			return out
		case <-ctx.Done():
			return transient(ctx.Err())
		}
	})
	return started
}

func (f *fakeCalls) answer(t *testing.T, ns, name string, out outcome) []string {
	t.Helper()
	f.mu.Lock()
	f.woken = nil
	ch := f.release[ns+"/"+name]
	f.mu.Unlock()
	ch <- out
	select {
	case <-f.wakes:
	case <-time.After(5 * time.Second):
		t.Fatalf("the answer of %s/%s woke nothing", ns, name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.woken
}

func TestWebhookCallsBoundPerTenant(t *testing.T) {
	f := newFakeCalls(2)
	// Tenant a takes its two slots; its third and fourth calls wait, in
	// order; tenant b is not held by a's calls.
	for _, name := range []string{"1", "2"} {
		if !f.start("a", name) {
			t.Fatalf("a/%s did not start with a free slot", name)
		}
	}
	for _, name := range []string{"3", "4"} {
		if f.start("a", name) {
			t.Fatalf("a/%s started beyond the tenant's %d slots", name, 2)
		}
	}
	if !f.start("b", "1") {
		t.Fatal("b/1 waits for a's slots")
	}
	k := func(ns, name string) callKey { return callKey{object: types.UID(ns + "/" + name), key: "k", step: "s"} }
	if _, state := f.collect(k("a", "1")); state != callInFlight {
		t.Fatalf("a/1 is %v before its answer, want in flight", state)
	}
	// a/1 answers: its cleanup and the first waiting cleanup of a are
	// woken, not b's.
	if diff := cmp.Diff([]string{"a/1", "a/3"}, f.answer(t, "a", "1", done())); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	out, state := f.collect(k("a", "1"))
	if state != callAnswered || !out.done {
		t.Errorf("a/1's answer = %v, %+v; want answered, done", state, out)
	}
	if _, state := f.collect(k("a", "1")); state != callNone {
		t.Errorf("a/1's answer collected twice")
	}
	// a/3 takes the freed slot; a/4 still waits.
	if !f.start("a", "3") {
		t.Fatal("a/3 did not get the slot a/1 freed")
	}
	if f.start("a", "4") {
		t.Fatal("a/4 started beyond the bound")
	}
	// b's answer wakes only b's cleanup.
	if diff := cmp.Diff([]string{"b/1"}, f.answer(t, "b", "1", done())); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
}

func TestWebhookCallsRecheckAfterAWakeNobodyTook(t *testing.T) {
	f := newFakeCalls(1)
	if !f.start("a", "1") || f.start("a", "2") || f.start("a", "3") {
		t.Fatal("want a/1 started, a/2 and a/3 waiting")
	}
	// a/1 answers and wakes a/2, which never comes back (its object went):
	// a/3 is woken after slotRecheck all the same.
	if diff := cmp.Diff([]string{"a/1", "a/2"}, f.answer(t, "a", "1", done())); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	select {
	case <-f.wakes:
	case <-time.After(slotRecheck + 5*time.Second):
		t.Fatal("a/3 was never woken")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if diff := cmp.Diff([]string{"a/1", "a/2", "a/3"}, f.woken); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
}

// TestWebhookCallsHoldAFailedCallBack: a failed call is not made again
// before its backoff (RetryBase, doubling per failure in a row); a success
// forgets the failures. Before, the run that started the next call
// succeeded and reset the work queue's backoff, so a receiver that refused
// at once was called (and its object patched) as fast as a worker could go.
func TestWebhookCallsHoldAFailedCallBack(t *testing.T) {
	now := time.Unix(1e9, 0)
	f := newFakeCalls(8)
	f.Now = func() time.Time { return now }
	k := callKey{object: "a/1", key: "k", step: "s"}
	refused := transient(errors.New("connection refused"))
	for i, backoff := range []time.Duration{RetryBase, 2 * RetryBase, 4 * RetryBase} {
		if _, held := f.heldBack(k); held {
			t.Fatalf("call %d held back before it failed again", i+1)
		}
		if !f.start("a", "1") {
			t.Fatalf("call %d did not start", i+1)
		}
		f.answer(t, "a", "1", refused)
		out, state := f.collect(k)
		if state != callAnswered || out.err == nil || out.after != backoff {
			t.Fatalf("call %d: %v, err %v, again after %s; want answered, failed, again after %s", i+1, state, out.err, out.after, backoff)
		}
		out, held := f.heldBack(k)
		if !held || out.err == nil || out.after != backoff {
			t.Fatalf("right after failure %d: held %v, err %v, after %s; want the failure held back for %s", i+1, held, out.err, out.after, backoff)
		}
		now = now.Add(backoff / 2)
		if out, held := f.heldBack(k); !held || out.after != backoff/2 {
			t.Fatalf("half-way through backoff %d: held %v, after %s; want held for %s more", i+1, held, out.after, backoff/2)
		}
		now = now.Add(backoff / 2)
	}
	// A success forgets the failures in a row: the next failure waits
	// RetryBase again.
	if !f.start("a", "1") {
		t.Fatal("the fourth call did not start")
	}
	f.answer(t, "a", "1", done())
	if out, state := f.collect(k); state != callAnswered || !out.done || out.after != 0 {
		t.Fatalf("success: %v %+v", state, out)
	}
	if _, held := f.heldBack(k); held {
		t.Fatal("held back after a success")
	}
	f.start("a", "1")
	f.answer(t, "a", "1", refused)
	if out, _ := f.collect(k); out.after != RetryBase {
		t.Errorf("a failure after a success waits %s, want %s", out.after, RetryBase)
	}
}
