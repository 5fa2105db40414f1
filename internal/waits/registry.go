/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package waits owns what a waiting target waits for: a pending wait or
// delete step registers the objects it depends on (a kind, a namespace or
// all, a label selector), and a metadata-only watch per kind wakes the
// target's cleanup at once when such an object is added, changed or goes,
// instead of the step finding out at its next poll.
//
// A wake only makes the step run again: the step then reads what it reads
// as it always does (a TeardownPolicy's steps as its ServiceAccount,
// internal/steps/identity.go). The watch itself runs as the controller and
// never hands an object to a step, so nothing of one tenant's objects
// reaches another's step; the most a wake can tell a step is that it is
// worth looking again, in the namespace and with the selector it already
// reads.
package waits

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/queuekey"
)

// Defaults of Options.
const (
	// DefaultSafetyNet is how soon a step all of whose dependencies are
	// watched runs again with no event: the watch can miss nothing it
	// delivers, but a bug, a stalled watch or a condition that reads the
	// clock must not leave a cleanup waiting for ever.
	DefaultSafetyNet = 30 * time.Second
	// DefaultMinInterval spaces the wakes of one target: a step that
	// depends on objects that change often (pods' status) runs again at
	// most this often, not at every event.
	DefaultMinInterval = 250 * time.Millisecond
)

// Dependency is what a pending step depends on: objects of a kind, in a
// namespace ("" for every namespace, or a cluster-scoped kind), matching a
// label selector (nil for every object).
type Dependency struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Selector  labels.Selector
}

// matches reports whether an object of the dependency's kind in namespace
// ns with any of the label sets (its labels before and after a change) is
// one the dependency selects.
func (d Dependency) matches(ns string, sets []labels.Set) bool {
	if d.Namespace != "" && d.Namespace != ns {
		return false
	}
	if d.Selector == nil || d.Selector.Empty() {
		return true
	}
	for _, s := range sets {
		if d.Selector.Matches(s) {
			return true
		}
	}
	return false
}

// Options configure a Registry.
type Options struct {
	// Cache is the manager's cache: a metadata-only informer per watched
	// kind, shared with the target controller where it already watches
	// the kind.
	Cache cache.Informers
	// Client asks the API server whether the controller may list and watch
	// a kind (SelfSubjectAccessReview).
	Client client.Client
	// Mapper maps a kind to its resource.
	Mapper meta.RESTMapper
	// Wake queues the cleanup of targets: (*guarded.Reconciler).Wake.
	Wake func(context.Context, ...queuekey.Request)
	// SafetyNet and MinInterval default to DefaultSafetyNet and
	// DefaultMinInterval.
	SafetyNet, MinInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Registry maps the objects pending steps depend on to the targets whose
// cleanup waits on them. Registrations are one-shot: a wake forgets every
// registration of its target, and the step's next run registers again if
// it is still pending; a step that finishes forgets its own. A target that
// is gone is forgotten at its next wake, at the latest after the safety net.
// The zero value is not usable: call New.
type Registry struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	kinds   map[schema.GroupVersionKind]*kind
	targets map[queuekey.Request]*waiting
	// index lists, per kind and namespace ("" for every namespace), the
	// targets with a dependency there: an event looks at two buckets, not
	// at every registration.
	index map[schema.GroupVersionKind]map[string]map[queuekey.Request]struct{}
	// recent is when each target was last woken, for MinInterval; entries
	// older than MinInterval are swept.
	recent     map[queuekey.Request]time.Time
	sweepAbove int
	timers     uint64 // timers armed so far
}

// waiting is one target's registrations and its timer.
type waiting struct {
	// owners maps each registering step to its dependencies.
	owners map[string][]Dependency
	// timer wakes the target at due: the safety net, or a wake postponed
	// by MinInterval.
	timer *time.Timer
	due   time.Time
	gen   uint64 // the timer's number: a stopped timer that fired anyway is ignored
}

// New returns a Registry; add it to the manager (it is a Runnable) so that
// its wakes stop with it.
func New(opts Options) *Registry {
	if opts.SafetyNet <= 0 {
		opts.SafetyNet = DefaultSafetyNet
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultMinInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Registry{
		opts: opts, ctx: ctx, cancel: cancel,
		kinds:   map[schema.GroupVersionKind]*kind{},
		targets: map[queuekey.Request]*waiting{},
		index:   map[schema.GroupVersionKind]map[string]map[queuekey.Request]struct{}{},
		recent:  map[queuekey.Request]time.Time{},
	}
}

// Start waits until ctx ends, then stops every timer and watch start.
func (r *Registry) Start(ctx context.Context) error {
	<-ctx.Done()
	r.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, w := range r.targets {
		r.dropLocked(t, w)
	}
	return nil
}

// Register records that step owner of target t is pending on deps, and
// replaces what owner registered before. It reports whether every
// dependency is covered by a watch that runs: then a wake comes as soon as
// one changes. Kinds not watched yet start being watched in the background,
// if the controller may list and watch them.
//
// Whether covered or not, the Registry also times the step's next run
// itself: after the safety net when covered, after poll otherwise, and
// never later than timeLeft (the step's timeout; 0 for none). So the step
// needs no requeue of its own, and the finalizer library's check-again
// time, which holds back every reconcile before it, is never set for it.
//
// Call it before reading the dependencies: an event between the read and
// the registration would otherwise be missed until the next timed run.
func (r *Registry) Register(t queuekey.Request, owner string, deps []Dependency, poll, timeLeft time.Duration) (covered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	covered = len(deps) > 0
	var kept []Dependency
	for _, d := range deps {
		switch r.kindLocked(d.GVK) {
		case watching:
			kept = append(kept, d)
		case starting:
			kept = append(kept, d) // wakes once its watch runs
			covered = false
		default:
			covered = false // never woken: timed like a poll
		}
	}
	w := r.targets[t]
	if w == nil {
		w = &waiting{owners: map[string][]Dependency{}}
		r.targets[t] = w
	}
	r.unindexLocked(t, w)
	w.owners[owner] = kept
	r.indexLocked(t, w)
	next := poll
	if covered {
		next = r.opts.SafetyNet
	}
	if timeLeft > 0 && timeLeft < next {
		next = timeLeft
	}
	r.armLocked(t, w, next)
	registered.Set(float64(len(r.targets)))
	return covered
}

// Forget drops what step owner of target t registered: the step finished
// or failed, and must not be woken for it again.
func (r *Registry) Forget(t queuekey.Request, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.targets[t]
	if w == nil {
		return
	}
	if _, ok := w.owners[owner]; !ok {
		return
	}
	r.unindexLocked(t, w)
	delete(w.owners, owner)
	r.indexLocked(t, w)
	if len(w.owners) == 0 && w.timer != nil {
		// The timer was the safety net of the registrations now gone (or a
		// postponed wake, which only re-runs what is pending anyway).
		w.timer.Stop()
		w.timer = nil
	}
	r.dropIfIdleLocked(t, w)
	registered.Set(float64(len(r.targets)))
}

// changed wakes the targets with a dependency on an object of kind gvk in
// namespace ns that carries (or carried) one of the label sets.
func (r *Registry) changed(gvk schema.GroupVersionKind, ns string, sets ...labels.Set) {
	r.mu.Lock()
	now := r.opts.Now()
	var wake []queuekey.Request
	for _, bucket := range []string{ns, ""} {
		for t := range r.index[gvk][bucket] {
			w := r.targets[t]
			if w == nil || !w.dependsOn(gvk, ns, sets) {
				continue
			}
			if last, ok := r.recent[t]; ok && now.Sub(last) < r.opts.MinInterval {
				// Woken a moment ago: once more when the interval is over,
				// however many events come until then.
				r.unindexLocked(t, w)
				clear(w.owners)
				r.armLocked(t, w, r.opts.MinInterval-now.Sub(last))
				continue
			}
			r.dropLocked(t, w)
			r.wokenLocked(t, now)
			wake = append(wake, t)
		}
		if ns == "" {
			break // cluster-scoped kind: one bucket
		}
	}
	registered.Set(float64(len(r.targets)))
	r.mu.Unlock()
	if len(wake) > 0 {
		wakes.WithLabelValues(causeEvent).Add(float64(len(wake)))
		r.opts.Wake(r.ctx, wake...)
	}
}

// dependsOn reports whether any registration of w selects the object.
func (w *waiting) dependsOn(gvk schema.GroupVersionKind, ns string, sets []labels.Set) bool {
	for _, deps := range w.owners {
		for _, d := range deps {
			if d.GVK == gvk && d.matches(ns, sets) {
				return true
			}
		}
	}
	return false
}

// armLocked makes w's timer fire within after, unless it fires sooner.
func (r *Registry) armLocked(t queuekey.Request, w *waiting, after time.Duration) {
	due := r.opts.Now().Add(after)
	if w.timer != nil {
		if !due.Before(w.due) {
			return
		}
		w.timer.Stop()
	}
	w.due = due
	r.timers++
	gen := r.timers
	w.gen = gen
	w.timer = time.AfterFunc(after, func() { r.timerFired(t, gen) })
}

func (r *Registry) timerFired(t queuekey.Request, gen uint64) {
	r.mu.Lock()
	w := r.targets[t]
	if w == nil || w.timer == nil || w.gen != gen || r.ctx.Err() != nil {
		r.mu.Unlock()
		return // stopped or replaced
	}
	w.timer = nil
	r.dropLocked(t, w)
	r.wokenLocked(t, r.opts.Now())
	registered.Set(float64(len(r.targets)))
	r.mu.Unlock()
	wakes.WithLabelValues(causeTimer).Inc()
	r.opts.Wake(r.ctx, t)
}

// dropLocked forgets every registration of t and its timer: one-shot.
func (r *Registry) dropLocked(t queuekey.Request, w *waiting) {
	r.unindexLocked(t, w)
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	delete(r.targets, t)
}

func (r *Registry) dropIfIdleLocked(t queuekey.Request, w *waiting) {
	if len(w.owners) == 0 && w.timer == nil {
		delete(r.targets, t)
	}
}

// wokenLocked notes when t was woken, and sweeps notes too old to matter,
// so that targets woken once and gone are not remembered.
func (r *Registry) wokenLocked(t queuekey.Request, now time.Time) {
	r.recent[t] = now
	if len(r.recent) <= r.sweepAbove {
		return
	}
	for k, at := range r.recent {
		if now.Sub(at) >= r.opts.MinInterval {
			delete(r.recent, k)
		}
	}
	r.sweepAbove = max(64, 2*len(r.recent))
}

func (r *Registry) indexLocked(t queuekey.Request, w *waiting) {
	for _, deps := range w.owners {
		for _, d := range deps {
			byNS := r.index[d.GVK]
			if byNS == nil {
				byNS = map[string]map[queuekey.Request]struct{}{}
				r.index[d.GVK] = byNS
			}
			if byNS[d.Namespace] == nil {
				byNS[d.Namespace] = map[queuekey.Request]struct{}{}
			}
			byNS[d.Namespace][t] = struct{}{}
		}
	}
}

func (r *Registry) unindexLocked(t queuekey.Request, w *waiting) {
	for _, deps := range w.owners {
		for _, d := range deps {
			byNS := r.index[d.GVK]
			delete(byNS[d.Namespace], t)
			if len(byNS[d.Namespace]) == 0 {
				delete(byNS, d.Namespace)
			}
			if len(byNS) == 0 {
				delete(r.index, d.GVK)
			}
		}
	}
}
