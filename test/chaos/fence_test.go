/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// stepRecord is the part of a step record the fencing test reads.
type stepRecord struct {
	Fingerprint string `json:"fingerprint"`
	Step        int    `json:"step"`
	Generation  int64  `json:"generation"`
	Epoch       int64  `json:"epoch"`
}

// recordWatch polls an object's step record under key and remembers every
// value it saw, in order, until stopped.
type recordWatch struct {
	mu   sync.Mutex
	seen []stepRecord
	gone atomic.Bool
	stop chan struct{}
	done chan struct{}
}

func watchRecord(obj client.Object, key string) *recordWatch {
	w := &recordWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			got := &corev1.ConfigMap{}
			err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got)
			if apierrors.IsNotFound(err) || err == nil && got.UID != obj.GetUID() {
				w.gone.Store(true)
				continue
			}
			var rec stepRecord
			if err != nil || json.Unmarshal([]byte(got.Annotations[steps.StateAnnotation(key)]), &rec) != nil {
				continue
			}
			w.mu.Lock()
			if len(w.seen) == 0 || w.seen[len(w.seen)-1] != rec {
				w.seen = append(w.seen, rec)
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *recordWatch) end() []stepRecord {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// backwards says where a sequence of records went back: to the version
// (fingerprint) an earlier record had left, or to a lower epoch.
func backwards(seen []stepRecord) []string {
	var out []string
	left := map[string]bool{}
	for i := 1; i < len(seen); i++ {
		prev, cur := seen[i-1], seen[i]
		if cur.Fingerprint != prev.Fingerprint {
			left[prev.Fingerprint] = true
		}
		if left[cur.Fingerprint] || cur.Epoch < prev.Epoch {
			out = append(out, fmt.Sprintf("%+v after %+v", cur, prev))
		}
	}
	return out
}

// TestResumedLeaderIsFenced (issue 27, family 1): two replicas with leader
// election; the leader holds a ConfigMap's teardown at the first of two
// steps (v1a, v1b) when it is stopped (SIGSTOP) past its lease. While it
// sleeps the policy is edited to one other step (v2), the standby takes the
// lease and holds the object at v2, and the superseded steps' webhook
// starts answering Success. Then the old leader is resumed (SIGCONT): it
// must not run a superseded step, move the step record back to the
// superseded version, or remove the key on the superseded version's
// answer; the object goes only once v2 succeeded. Before the fence the
// resumed leader ran v1a and v1b from its stale index within milliseconds,
// wrote v1's record over v2's and removed the key.
//
// Negative control (no pause): the same edit with the leader running is
// served by it, and the object goes once v2 succeeded.
func TestResumedLeaderIsFenced(t *testing.T) {
	testenv.SkipShort(t)
	for _, pause := range []bool{true, false} {
		name := "paused past its lease"
		if !pause {
			name = "without the pause"
		}
		t.Run(name, func(t *testing.T) { fenceScenario(t, pause) })
	}
}

func fenceScenario(t *testing.T, pause bool) {
	const key = "example.com/fenced"
	ns := newNamespace(t)
	var v1Succeeds, v2Succeeds atomic.Bool
	var mu sync.Mutex
	calls := map[string][]time.Time{}
	hook := newCleanupServer(t, func(req webhookRequest) answer {
		mu.Lock()
		calls[req.Step] = append(calls[req.Step], time.Now())
		mu.Unlock()
		switch {
		case req.Step == "v2" && v2Succeeds.Load(), req.Step != "v2" && v1Succeeds.Load():
			return success
		}
		return inProgress
	})
	callsSince := func(step string, since time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, at := range calls[step] {
			if !at.Before(since) {
				n++
			}
		}
		return n
	}
	replicas := []*procctl.Controller{newController(t, "replica-1", ns), newController(t, "replica-2", ns)}
	for _, r := range replicas {
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := procctl.WaitLeader(context.Background(), 60*time.Second, replicas...)
	if err != nil {
		t.Fatal(err)
	}
	standby := replicas[0]
	if standby == leader {
		standby = replicas[1]
	}
	// Both replicas' caches hold the policy and the object before the
	// pause: the standby is ready to take over, the leader to act.
	pol := webhookPolicy(ns, "fenced", key, "guarded", hook)
	pol.Spec.Steps = []teardownv1alpha1.Step{hook.step("v1a"), hook.step("v1b")}
	create(t, pol)
	mustBeReady(t, pol)
	cm := guardedConfigMaps(t, ns, key, 1)[0]
	records := watchRecord(cm, key)
	deleteNow(t, cm)
	testenv.Eventually(t, 30*time.Second, "the leader to hold the object at v1a", func(context.Context) (bool, error) {
		return callsSince("v1a", time.Time{}) > 0, nil
	})
	time.Sleep(500 * time.Millisecond) // its step record written

	paused := time.Now()
	if pause {
		if err := leader.Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = leader.Resume() })
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"steps": []teardownv1alpha1.Step{hook.step("v2")}}})
	if err := k8s.Patch(context.Background(), pol, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	edited := time.Now()
	testenv.Eventually(t, 90*time.Second, "the object to be held at v2", func(context.Context) (bool, error) {
		return callsSince("v2", edited) > 0, nil
	})
	if pause && !standby.IsLeader() {
		t.Fatalf("v2 ran while %s was paused, but %s does not lead", leader.Name(), standby.Name())
	}
	t.Logf("held at v2 %s after the edit", time.Since(edited).Round(time.Millisecond))
	time.Sleep(time.Second)
	v1Succeeds.Store(true)
	released := time.Now()
	if pause {
		if err := leader.Resume(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s resumed after %s", leader.Name(), time.Since(paused).Round(time.Millisecond))
	}
	// Whatever a resumed replica does, it does within moments of its
	// resumption; its renewal fails within RenewDeadline.
	time.Sleep(8 * time.Second)
	if records.gone.Load() {
		t.Errorf("the object went before v2 succeeded (v1a called %d, v1b %d times since the edit)",
			callsSince("v1a", released), callsSince("v1b", released))
	}
	if n, m := callsSince("v1a", released), callsSince("v1b", released); n+m > 0 {
		t.Errorf("superseded steps ran after v2 held the object: v1a %d, v1b %d times", n, m)
	}
	if pause && leader.Running() {
		t.Logf("%s still runs after its resumption", leader.Name())
	}
	v2Succeeds.Store(true)
	testenv.Eventually(t, 60*time.Second, "the object to go after v2 succeeded", testenv.Gone(k8s, cm))
	seen := records.end()
	if bad := backwards(seen); len(bad) > 0 {
		t.Errorf("the step record moved backwards: %v (all: %+v)", bad, seen)
	}
	t.Logf("step records seen: %+v", seen)
}
