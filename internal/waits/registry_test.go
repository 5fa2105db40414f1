/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package waits

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/queuekey"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	pods       = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	configMaps = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	nodes      = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	services   = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	targetKind = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// woken records the targets a Registry wakes, by name.
type woken struct {
	mu    sync.Mutex
	names []string
}

func (w *woken) wake(_ context.Context, reqs ...queuekey.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range reqs {
		w.names = append(w.names, r.Key().String())
	}
}

func (w *woken) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.names
	w.names = nil
	slices.Sort(out)
	return out
}

// newTestRegistry returns a Registry whose kinds are all watched already
// (no cache, no API server) except services, which it may not watch.
func newTestRegistry(t *testing.T, now func() time.Time) (*Registry, *woken) {
	t.Helper()
	w := &woken{}
	r := New(Options{Wake: w.wake, Now: now, SafetyNet: time.Hour})
	for _, gvk := range []schema.GroupVersionKind{pods, configMaps, nodes} {
		r.kinds[gvk] = &kind{state: watching}
	}
	r.kinds[services] = &kind{state: refused, until: time.Now().Add(time.Hour)}
	t.Cleanup(r.cancel)
	return r, w
}

func req(ns, name string) queuekey.Request {
	return queuekey.For(targetKind, types.NamespacedName{Namespace: ns, Name: name})
}

func sel(t *testing.T, s string) labels.Selector {
	t.Helper()
	out, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChangedWakesMatchingTargets(t *testing.T) {
	testenv.SkipShort(t)
	type event struct {
		gvk    schema.GroupVersionKind
		ns     string
		labels []labels.Set
	}
	cases := []struct {
		name  string
		event event
		want  []string
	}{
		{"pod matching app=web in a", event{pods, "a", []labels.Set{{"app": "web"}}}, []string{"a/web", "all/any-pod"}},
		{"pod app=db in a matches nobody's selector but the all-namespaces one", event{pods, "a", []labels.Set{{"app": "db"}}}, []string{"all/any-pod"}},
		{"pod app=web in another namespace", event{pods, "b", []labels.Set{{"app": "web"}}}, []string{"all/any-pod", "b/web-b"}},
		{"pod whose labels changed away from app=web: old labels match", event{pods, "a", []labels.Set{{"app": "web"}, {"app": "db"}}}, []string{"a/web", "all/any-pod"}},
		{"pod whose labels changed to app=web: new labels match", event{pods, "a", []labels.Set{{}, {"app": "web"}}}, []string{"a/web", "all/any-pod"}},
		{"configmap in a: the pod waiters stay asleep", event{configMaps, "a", []labels.Set{{"app": "web"}}}, []string{"a/cm-everything"}},
		{"configmap in c: nobody", event{configMaps, "c", []labels.Set{{"app": "web"}}}, nil},
		{"node (cluster-scoped)", event{nodes, "", []labels.Set{{"pool": "gpu"}}}, []string{"x/gpu-nodes"}},
		{"node of another pool", event{nodes, "", []labels.Set{{"pool": "cpu"}}}, nil},
		{"service: not watched, never registered", event{services, "a", []labels.Set{{"app": "web"}}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, w := newTestRegistry(t, nil)
			r.Register(req("a", "web"), "p step s", []Dependency{{GVK: pods, Namespace: "a", Selector: sel(t, "app=web")}}, time.Hour, 0)
			r.Register(req("b", "web-b"), "p step s", []Dependency{{GVK: pods, Namespace: "b", Selector: sel(t, "app in (web)")}}, time.Hour, 0)
			r.Register(req("all", "any-pod"), "p step s", []Dependency{{GVK: pods, Selector: labels.Everything()}}, time.Hour, 0)
			r.Register(req("a", "cm-everything"), "p step s", []Dependency{{GVK: configMaps, Namespace: "a"}}, time.Hour, 0)
			r.Register(req("x", "gpu-nodes"), "p step s", []Dependency{{GVK: nodes, Selector: sel(t, "pool=gpu")}}, time.Hour, 0)
			r.Register(req("a", "svc"), "p step s", []Dependency{{GVK: services, Namespace: "a"}}, time.Hour, 0)
			r.changed(tc.event.gvk, tc.event.ns, tc.event.labels...)
			if diff := cmp.Diff(tc.want, w.take()); diff != "" {
				t.Errorf("woken (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegisterCovered(t *testing.T) {
	r, _ := newTestRegistry(t, nil)
	cases := []struct {
		name string
		deps []Dependency
		want bool
	}{
		{"every kind watched", []Dependency{{GVK: pods, Namespace: "a"}, {GVK: configMaps, Namespace: "a"}}, true},
		{"one kind the controller may not watch", []Dependency{{GVK: pods, Namespace: "a"}, {GVK: services, Namespace: "a"}}, false},
		{"nothing to wait on", nil, false},
	}
	for _, tc := range cases {
		if got := r.Register(req("a", tc.name), "p step s", tc.deps, time.Hour, 0); got != tc.want {
			t.Errorf("%s: covered = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRegistrationsAreOneShotAndForgotten(t *testing.T) {
	clock := time.Now()
	r, w := newTestRegistry(t, func() time.Time { return clock })
	dep := []Dependency{{GVK: pods, Namespace: "a", Selector: sel(t, "app=web")}}
	web := labels.Set{"app": "web"}

	r.Register(req("a", "t"), "p step s", dep, time.Hour, 0)
	r.changed(pods, "a", web)
	r.changed(pods, "a", web)
	if diff := cmp.Diff([]string{"a/t"}, w.take()); diff != "" {
		t.Errorf("a registration wakes once (-want +got):\n%s", diff)
	}
	if got := len(r.targets); got != 0 {
		t.Errorf("%d targets still registered after the wake, want 0", got)
	}

	// The step ran again (long after) and is pending again: woken again.
	clock = clock.Add(time.Second)
	r.Register(req("a", "t"), "p step s", dep, time.Hour, 0)
	r.changed(pods, "a", web)
	if diff := cmp.Diff([]string{"a/t"}, w.take()); diff != "" {
		t.Errorf("registered again (-want +got):\n%s", diff)
	}

	// The step finished: forgotten, never woken for it again.
	clock = clock.Add(time.Second)
	r.Register(req("a", "t"), "p step s", dep, time.Hour, 0)
	r.Forget(req("a", "t"), "p step s")
	r.changed(pods, "a", web)
	if diff := cmp.Diff([]string(nil), w.take()); diff != "" {
		t.Errorf("forgotten (-want +got):\n%s", diff)
	}
	if len(r.targets) != 0 || len(r.index) != 0 {
		t.Errorf("after Forget: %d targets, %d indexed kinds; want none", len(r.targets), len(r.index))
	}
}

func TestForgetKeepsOtherSteps(t *testing.T) {
	r, w := newTestRegistry(t, nil)
	r.Register(req("a", "t"), "p1 step s", []Dependency{{GVK: pods, Namespace: "a"}}, time.Hour, 0)
	r.Register(req("a", "t"), "p2 step s", []Dependency{{GVK: configMaps, Namespace: "a"}}, time.Hour, 0)
	r.Forget(req("a", "t"), "p1 step s")
	r.changed(pods, "a", labels.Set{})
	r.changed(configMaps, "a", labels.Set{})
	if diff := cmp.Diff([]string{"a/t"}, w.take()); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
}

func TestWakesOfOneTargetAreSpaced(t *testing.T) {
	r, w := newTestRegistry(t, nil)
	r.opts.MinInterval = 300 * time.Millisecond
	dep := []Dependency{{GVK: pods, Namespace: "a"}}
	r.Register(req("a", "t"), "p step s", dep, time.Hour, 0)
	r.changed(pods, "a", labels.Set{})
	start := time.Now()
	if diff := cmp.Diff([]string{"a/t"}, w.take()); diff != "" {
		t.Fatalf("first wake (-want +got):\n%s", diff)
	}
	// Pending again at once, and the pods keep changing.
	r.Register(req("a", "t"), "p step s", dep, time.Hour, 0)
	r.changed(pods, "a", labels.Set{})
	r.changed(pods, "a", labels.Set{})
	if got := w.take(); len(got) != 0 {
		t.Fatalf("woken again %v right after a wake; want it postponed", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	var got []string
	for len(got) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		got = w.take()
	}
	if diff := cmp.Diff([]string{"a/t"}, got); diff != "" {
		t.Errorf("postponed wake (-want +got):\n%s", diff)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("postponed wake came after %s, want about the 300ms interval", waited)
	}
}

func TestTimedRunsWakeAndForget(t *testing.T) {
	for _, tc := range []struct {
		name           string
		deps           []Dependency
		poll, timeLeft time.Duration
	}{
		{"covered: the safety net, cut to the step's timeout", []Dependency{{GVK: pods, Namespace: "a"}}, time.Hour, 50 * time.Millisecond},
		{"not covered: the poll", []Dependency{{GVK: services, Namespace: "a"}}, 50 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) { testTimedRun(t, tc.deps, tc.poll, tc.timeLeft) })
	}
}

func testTimedRun(t *testing.T, deps []Dependency, poll, timeLeft time.Duration) {
	r, w := newTestRegistry(t, nil)
	r.Register(req("a", "t"), "p step s", deps, poll, timeLeft)
	deadline := time.Now().Add(5 * time.Second)
	var got []string
	for len(got) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		got = w.take()
	}
	if diff := cmp.Diff([]string{"a/t"}, got); diff != "" {
		t.Errorf("safety net (-want +got):\n%s", diff)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.targets) != 0 {
		t.Errorf("%d targets registered after the safety net fired; want 0 (a gone target is forgotten)", len(r.targets))
	}
}

// TestWatchStartedWakesWhoRegisteredWhileStarting: a step registered on a
// kind whose watch was still starting is not covered; when the watch starts
// it runs again at once (an object that went before the watch's first list
// is in no event), and its next registration is covered.
func TestWatchStartedWakesWhoRegisteredWhileStarting(t *testing.T) {
	r, w := newTestRegistry(t, time.Now)
	secrets := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	r.kinds[secrets] = &kind{state: starting}
	dep := Dependency{GVK: secrets, Namespace: "a", Selector: labels.Everything()}
	if covered := r.Register(req("a", "first"), "step", []Dependency{dep}, 2*time.Second, 0); covered {
		t.Fatal("covered by a watch that has not started")
	}
	r.Register(req("a", "other"), "step", []Dependency{{GVK: pods, Namespace: "a", Selector: labels.Everything()}}, 2*time.Second, 0)

	r.watchStarted(secrets)
	if diff := cmp.Diff([]string{"a/first"}, w.take()); diff != "" {
		t.Errorf("woken when the watch started (-want +got):\n%s", diff)
	}
	if covered := r.Register(req("a", "first"), "step", []Dependency{dep}, 2*time.Second, 0); !covered {
		t.Error("not covered once the watch runs")
	}
}
