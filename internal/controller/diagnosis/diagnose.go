/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
)

// Diagnoser finds, by itself, why guarded objects stay terminating: every
// Tick it walks the terminating objects the served policies guard (from
// the cache), and runs the diagnosis engine (internal/diagnose) on what
// the pending step of each one terminating longer than After waits on, at
// most once per Every per object. What it finds goes to the policy's
// status.blockedObjects (the status refresh reads it), to a Warning Event
// on the object when the cause changes, and to the gauge
// teardown_blocked_objects.
//
// It is a runnable of its own, on the leader only (the runs it reads are
// the leader's), so a pass never holds up the target queues.
type Diagnoser struct {
	// After is how long an object terminates before it is diagnosed.
	After time.Duration
	// Every is how often one object is diagnosed again at most.
	Every time.Duration
	// Tick is how often a pass looks for objects to diagnose.
	Tick time.Duration
	// Kinds are resources whose every terminating object is diagnosed,
	// guarded or not (--diagnose-kinds), with policy "" in the metric.
	Kinds []schema.GroupResource

	Config *rest.Config
	Mapper meta.RESTMapper
	// Cache is the manager's cache, whose informers a pass walks without
	// copying the objects (guarded.EachCached).
	Cache cache.Informers
	// Policies reads the policies' status, for the diagnoses an earlier
	// leader found (carried); nil to ignore them.
	Policies client.Reader
	Index    *policy.Index
	Waiting  *steps.Waiting
	Recorder events.EventRecorder

	// lastSession is when a pass last ran the engine.
	lastSession time.Time

	mu    sync.Mutex
	found map[diagKey]*diagnosed
	// series are the gauge's label sets set by the last pass.
	series map[[2]string]bool
}

// diagKey names one cleanup: a finalizer key on one object.
type diagKey struct {
	key string
	uid types.UID
}

// diagnosed is the last diagnosis of one cleanup.
type diagnosed struct {
	d      diagnosis
	policy policy.Ref
	since  time.Time // when this cause was first found
	at     time.Time // when it was last diagnosed
}

// NeedLeaderElection: only the leader runs steps, and so knows what they
// wait on.
func (x *Diagnoser) NeedLeaderElection() bool { return true }

// Start runs a pass every Tick until ctx ends.
func (x *Diagnoser) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("diagnose")
	t := time.NewTicker(x.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := x.Pass(logf.IntoContext(ctx, log)); err != nil && ctx.Err() == nil {
			log.Error(err, "Diagnosis pass failed")
		}
	}
}

// candidate is a guarded object a pass diagnoses.
type candidate struct {
	served *policy.Served
	key    string
	gvk    schema.GroupVersionKind
	obj    *metav1.PartialObjectMetadata
}

// Pass diagnoses the objects due, then forgets what is gone.
//
// The engine's session reads cluster-wide lists once (workloads, Leases,
// CRDs, APIServices, policies: docs/performance.md), so sessions are
// batched: at most one per min(Every, 1m), and a session also takes every
// object whose last diagnosis is older than Every/2, so that objects that
// became stuck at different times share later sessions.
func (x *Diagnoser) Pass(ctx context.Context) error {
	now := time.Now()
	session := now.Sub(x.lastSession) >= min(x.Every, time.Minute)
	seen := map[diagKey]bool{}
	guardedUIDs := map[types.UID]bool{}
	var due, early []candidate
	for _, s := range x.Index.All() {
		for _, k := range s.Keys {
			for _, gvk := range k.Kinds {
				// Candidates are copied: the walk hands out the cached objects.
				err := guarded.EachCached(ctx, x.Cache, gvk, s.Policy.Ref.Namespace, func(obj *metav1.PartialObjectMetadata) bool {
					if obj.DeletionTimestamp == nil || !slices.Contains(obj.Finalizers, k.Key) {
						return true
					}
					dk := diagKey{k.Key, obj.UID}
					seen[dk], guardedUIDs[obj.UID] = true, true
					if !session || now.Sub(obj.DeletionTimestamp.Time) < x.After {
						return true
					}
					switch {
					case x.dueIn(dk, now, x.Every):
						due = append(due, candidate{served: s, key: k.Key, gvk: gvk, obj: copyWithKind(obj, gvk)})
					case x.dueIn(dk, now, x.Every/2):
						early = append(early, candidate{served: s, key: k.Key, gvk: gvk, obj: copyWithKind(obj, gvk)})
					}
					return true
				})
				if err != nil {
					return fmt.Errorf("listing %s: %w", gvk.Kind, err)
				}
			}
		}
	}
	var ex *explainer
	if session && (len(due) > 0 || len(x.Kinds) > 0) {
		cluster, err := kube.NewForConfig(x.Config, x.Mapper)
		if err != nil {
			return fmt.Errorf("building the diagnosis's clients: %w", err)
		}
		ex = &explainer{cluster: cluster, now: now, waits: x.Waiting.Graph()}
		x.lastSession = now
	}
	var kindsDue []kindCandidate
	if ex != nil && len(x.Kinds) > 0 {
		kindsDue = x.terminatingOfKinds(ctx, ex, guardedUIDs, seen, now)
	} else {
		x.keepKinds(seen) // not listed in this pass
	}
	if len(due) > 0 || len(kindsDue) > 0 {
		start := time.Now()
		x.diagnoseAll(ctx, ex, append(due, early...), now)
		x.diagnoseKinds(ctx, ex, kindsDue, now)
		logf.FromContext(ctx).V(1).Info("Diagnosis session", "guarded", len(due)+len(early), "ofKinds", len(kindsDue),
			"explained", ex.explained, "duration", time.Since(start).String())
	}
	x.forgetExcept(seen)
	x.Waiting.Retain(func(key string, uid types.UID) bool { return seen[diagKey{key, uid}] })
	x.observe()
	return nil
}

// copyWithKind copies a cached object and sets its kind (the Event
// recorder needs it).
func copyWithKind(obj *metav1.PartialObjectMetadata, gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	c := obj.DeepCopy()
	c.SetGroupVersionKind(gvk)
	return c
}

// known is true when this process diagnosed k before.
func (x *Diagnoser) known(k diagKey) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.found[k]
	return ok
}

// dueIn is true when k was never diagnosed, or last diagnosed age ago or
// more.
func (x *Diagnoser) dueIn(k diagKey, now time.Time, age time.Duration) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	f, ok := x.found[k]
	return !ok || now.Sub(f.at) >= age
}

// diagnoseAll explains the due guarded objects with the pass's session
// (one kube.Cluster), so that every list the engine reads is read once
// per pass.
func (x *Diagnoser) diagnoseAll(ctx context.Context, ex *explainer, due []candidate, now time.Time) {
	for _, c := range due {
		if ctx.Err() != nil {
			return
		}
		w, hasWait := x.Waiting.Get(c.key, c.obj.UID)
		d, ok := ex.diagnose(ctx, c.served.Policy, c.key, c.gvk, c.obj, w, hasWait)
		step := ""
		if hasWait {
			step = w.Step
		}
		x.record(ctx, diagKey{c.key, c.obj.UID}, c.served.Ref, c.obj, d, ok, step, now)
	}
}

// record keeps one object's diagnosis (ok false: nothing stuck found, so
// it waits Every before the next), and puts a TerminationBlocked Event on
// it when the cause changed.
func (x *Diagnoser) record(ctx context.Context, dk diagKey, ref policy.Ref, obj *metav1.PartialObjectMetadata, d diagnosis, ok bool, step string, now time.Time) {
	var carried *diagnosed
	if ok && !x.known(dk) {
		if c := x.carried(ctx, ref, obj); d.carries(c) {
			carried = &diagnosed{d: d, since: c.Since.Time}
		}
	}
	x.mu.Lock()
	if x.found == nil {
		x.found = map[diagKey]*diagnosed{}
	}
	prev := x.found[dk]
	if prev == nil {
		prev = carried
	}
	if !ok {
		x.found[dk] = &diagnosed{policy: ref, at: now}
		x.mu.Unlock()
		return
	}
	changed := prev == nil || prev.d.cause == "" || !prev.d.same(d)
	since := now
	if !changed {
		since = prev.since
	}
	x.found[dk] = &diagnosed{d: d, policy: ref, since: since, at: now}
	x.mu.Unlock()
	if !changed {
		return
	}
	// The Event is read by whoever may read the object's namespace: a
	// ClusterTeardownPolicy's diagnosis, whole in its status, is told
	// there as a TeardownPolicy's is (steps.Audience).
	if a := steps.AudienceOf(obj.GroupVersionKind(), obj); a.Namespace != "" {
		d = tenantView(d, a.Namespace, obj.GroupVersionKind(), obj)
	}
	note := d.message
	if step != "" {
		note = "step " + step + ": " + note
	}
	logf.FromContext(ctx).V(1).Info("Diagnosed a stuck object", "object", obj.Namespace+"/"+obj.Name, "kind", obj.Kind, "cause", d.cause)
	x.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, teardownv1alpha1.TerminationBlockedReason, "Diagnose",
		"%s: %s", d.cause, diagnose.Shorten(note, 1000))
}

// keepKinds marks the diagnoses of --diagnose-kinds objects as seen, in a
// pass that does not list their kinds.
func (x *Diagnoser) keepKinds(seen map[diagKey]bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k := range x.found {
		if k.key == "" {
			seen[k] = true
		}
	}
}

// forgetExcept drops the diagnoses of cleanups not in keep: finished,
// released, or their object gone.
func (x *Diagnoser) forgetExcept(keep map[diagKey]bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k := range x.found {
		if !keep[k] {
			delete(x.found, k)
		}
	}
}

// Lookup returns the diagnosis of the cleanup under key of the object uid,
// for status.blockedObjects; nil when there is none.
func (x *Diagnoser) Lookup(key string, uid types.UID) *teardownv1alpha1.Diagnosis {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	f, ok := x.found[diagKey{key, uid}]
	if !ok || f.d.cause == "" {
		return nil
	}
	return &teardownv1alpha1.Diagnosis{Cause: f.d.cause, Catalog: f.d.catalog, Blocker: f.d.blocker.DeepCopy(),
		Message: f.d.message, Since: metav1.NewTime(f.since.Truncate(time.Second))}
}

// observe sets teardown_blocked_objects from the diagnoses kept, and
// deletes the series no object is counted under any more.
func (x *Diagnoser) observe() {
	x.mu.Lock()
	counts := map[[2]string]int{}
	for _, f := range x.found {
		if f.d.cause != "" {
			counts[[2]string{metricPolicy(f.policy), f.d.cause}]++
		}
	}
	old := x.series
	x.series = map[[2]string]bool{}
	for l := range counts {
		x.series[l] = true
	}
	x.mu.Unlock()
	for l, n := range counts {
		blockedObjects.WithLabelValues(l[0], l[1]).Set(float64(n))
	}
	for l := range old {
		if _, ok := counts[l]; !ok {
			blockedObjects.DeleteLabelValues(l[0], l[1])
		}
	}
}

// metricPolicy is a policy's value of the policy label: namespace/name for
// a TeardownPolicy, the name of a ClusterTeardownPolicy.
func metricPolicy(ref policy.Ref) string {
	if ref.Namespace == "" {
		return ref.Name
	}
	return ref.Namespace + "/" + ref.Name
}
