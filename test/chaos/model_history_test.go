/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// This file turns the recorded watch events into histories the checker
// reads: each ConfigMap's, policy's and namespace's states in the order
// the API server wrote them, each with the time the watch delivered it.
// Nothing here knows how the controller decides; it only reads the API.

// forever closes the last state of something that is still there.
var forever = time.Unix(1<<40, 0)

type objState struct {
	At   time.Time
	Gap  bool
	Gone bool
	CM   *corev1.ConfigMap
}

type objHist struct {
	UID      types.UID
	NS, Name string
	States   []objState
}

// deletionStart is the object's deletionTimestamp (to the second), or the
// zero time if none was seen.
func (o *objHist) deletionStart() time.Time {
	for _, s := range o.States {
		if s.CM.DeletionTimestamp != nil {
			return s.CM.DeletionTimestamp.Time
		}
	}
	return time.Time{}
}

type polState struct {
	At       time.Time
	Gap      bool
	Gone     bool
	Deleting bool
	Ready    bool
	Spec     teardownv1alpha1.TeardownPolicySpec
	Status   teardownv1alpha1.TeardownPolicyStatus
	Gen      int64
}

type polHist struct {
	ID, Kind, NS, Name string
	UID                types.UID
	States             []polState
}

// key is the finalizer key of a spec: its own, or the policy's default.
func (p *polHist) key(s teardownv1alpha1.TeardownPolicySpec) string {
	if s.Finalizer != "" {
		return s.Finalizer
	}
	if p.Kind == "ClusterTeardownPolicy" {
		return "teardown.dev/" + p.Name
	}
	return p.NS + ".teardown.dev/" + p.Name
}

// deletedAt is the earliest time the policy may have been deleted: when it
// was first seen being deleted or gone, or, if that was first seen across
// a watch gap, when it was last seen before the gap.
func (p *polHist) deletedAt() (time.Time, bool) {
	for i, s := range p.States {
		if s.Deleting || s.Gone {
			if s.Gap && i > 0 {
				return p.States[i-1].At, true
			}
			return s.At, true
		}
	}
	return time.Time{}, false
}

// readyBy says whether the policy was seen Ready=True at or before t.
func (p *polHist) readyBy(t time.Time) bool {
	for _, s := range p.States {
		if s.At.After(t) {
			break
		}
		if s.Ready {
			return true
		}
	}
	return false
}

type nsState struct {
	At       time.Time
	Labels   map[string]string
	Deleting bool
	Gone     bool
}

// history is everything the watches saw of one run.
type history struct {
	objs map[types.UID]*objHist
	pols map[string]*polHist // by policyID; names are never reused in a run
	nss  map[string][]nsState
	evts []record
}

func buildHistory(recs []record, inRun map[string]bool, policyWrites map[string]polWrite) *history {
	h := &history{objs: map[types.UID]*objHist{}, pols: map[string]*polHist{}, nss: map[string][]nsState{}}
	for _, r := range recs {
		gone := r.Type == watch.Deleted
		switch o := r.Obj.(type) {
		case *corev1.ConfigMap:
			if !inRun[o.Namespace] {
				continue
			}
			oh := h.objs[o.UID]
			if oh == nil {
				oh = &objHist{UID: o.UID, NS: o.Namespace, Name: o.Name}
				h.objs[o.UID] = oh
			}
			oh.States = append(oh.States, objState{At: r.At, Gap: r.Gap, Gone: gone, CM: o})
		case *corev1.Namespace:
			if inRun[o.Name] {
				h.nss[o.Name] = append(h.nss[o.Name], nsState{At: r.At, Labels: o.Labels, Deleting: o.DeletionTimestamp != nil, Gone: gone})
			}
		case *corev1.Event:
			if inRun[o.Namespace] {
				h.evts = append(h.evts, r)
			}
		case *teardownv1alpha1.TeardownPolicy:
			if inRun[o.Namespace] {
				h.addPolicy(r, policyWrites, "TeardownPolicy", o.ObjectMeta, o.Spec, o.Status)
			}
		case *teardownv1alpha1.ClusterTeardownPolicy:
			h.addPolicy(r, policyWrites, "ClusterTeardownPolicy", o.ObjectMeta, o.Spec, o.Status)
		}
	}
	return h
}

func (h *history) addPolicy(r record, writes map[string]polWrite, kind string, om metav1.ObjectMeta, spec teardownv1alpha1.TeardownPolicySpec, st teardownv1alpha1.TeardownPolicyStatus) {
	id := policyID(kind, om.Namespace, om.Name)
	p := h.pols[id]
	if p == nil || p.UID != om.UID {
		p = &polHist{ID: id, Kind: kind, NS: om.Namespace, Name: om.Name, UID: om.UID}
		h.pols[id] = p
	}
	at := r.At
	var prevGen int64
	if n := len(p.States); n > 0 {
		prevGen = p.States[n-1].Gen
	}
	if om.DeletionTimestamp != nil || r.Type == watch.Deleted {
		// Deleted by the generator: in effect from when it sent the
		// deletion (a deletion it did not send, its namespace's, has none).
		if sent, ok := writes[string(om.UID)+"/deleted"]; ok && sent.At.Before(at) && (len(p.States) == 0 || !p.States[len(p.States)-1].Deleting) {
			at = sent.At
		}
	}
	// The generations the watch never delivered (a relist after a
	// kube-apiserver restart sees only the last): each the generator wrote
	// is a state of its own, under the spec written, from when it was sent.
	for g := prevGen + 1; g < om.Generation; g++ {
		w, ok := writes[fmt.Sprintf("%s/%d", om.UID, g)]
		if !ok || w.Spec == nil || !w.At.Before(at) {
			continue
		}
		missed := polState{At: w.At, Spec: *w.Spec, Gen: g}
		if n := len(p.States); n > 0 {
			prev := p.States[n-1]
			missed.Deleting, missed.Ready, missed.Status = prev.Deleting, prev.Ready, prev.Status
			if missed.At.Before(prev.At) {
				missed.At = prev.At // keep the states in order
			}
		}
		p.States = append(p.States, missed)
	}
	if w, ok := writes[fmt.Sprintf("%s/%d", om.UID, om.Generation)]; ok && om.Generation > prevGen && w.At.Before(at) {
		at = w.At // the generator's own write: in effect from when it was sent
	}
	if n := len(p.States); n > 0 && at.Before(p.States[n-1].At) {
		at = p.States[n-1].At // keep the states in order
	}
	p.States = append(p.States, polState{At: at, Gap: r.Gap, Gone: r.Type == watch.Deleted, Deleting: om.DeletionTimestamp != nil,
		Ready: meta.IsStatusConditionTrue(st.Conditions, teardownv1alpha1.ReadyCondition), Spec: spec, Status: st, Gen: om.Generation})
}

// nsDeletedAt is when ns's deletion was first seen (zero if never).
func (h *history) nsDeletedAt(ns string) time.Time {
	for _, s := range h.nss[ns] {
		if s.Deleting || s.Gone {
			return s.At
		}
	}
	return time.Time{}
}

// nsAt is the namespace's state at t (ok false before the first).
func (h *history) nsAt(ns string, t time.Time) (nsState, bool) {
	var cur nsState
	ok := false
	for _, s := range h.nss[ns] {
		if s.At.After(t) {
			break
		}
		cur, ok = s, true
	}
	return cur, ok
}

// selects says whether a policy state with this kind, namespace and name
// selects a ConfigMap with these labels in a namespace with nsLabels.
func (p *polHist) selects(s teardownv1alpha1.TeardownPolicySpec, ns string, objLabels, nsLabels map[string]string) bool {
	if p.Kind == "TeardownPolicy" && p.NS != ns {
		return false
	}
	for _, t := range s.Targets {
		if t.APIVersion != "v1" || t.Kind != "ConfigMap" || t.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(t.Selector)
		if err != nil || !sel.Matches(klabels.Set(objLabels)) {
			continue
		}
		if t.NamespaceSelector != nil && p.Kind == "ClusterTeardownPolicy" {
			nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
			if err != nil || !nsSel.Matches(klabels.Set(nsLabels)) {
				continue
			}
		}
		return true
	}
	return false
}

// firstSelected is the earliest time at which policy p, with key key,
// selected object o (by their states and its namespace's), or false. The
// controller decides from caches that may lag the API by a moment, so each
// of the three may be any state it had in the slack before that time.
func (h *history) firstSelected(p *polHist, o *objHist, key string) (time.Time, bool) {
	var times []time.Time
	for _, s := range p.States {
		times = append(times, s.At)
	}
	for _, s := range o.States {
		times = append(times, s.At)
	}
	for _, s := range h.nss[o.NS] {
		times = append(times, s.At)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	at := func(s polState) time.Time { return s.At }
	for _, t := range times {
		for _, ps := range statesWithin(p.States, t, at) {
			if ps.Gone {
				continue
			}
			for _, spec := range specsInForce(ps) {
				if p.key(spec) != key {
					continue
				}
				for _, os := range statesWithin(o.States, t, func(s objState) time.Time { return s.At }) {
					for _, ns := range statesWithin(h.nss[o.NS], t, func(s nsState) time.Time { return s.At }) {
						if !os.Gone && p.selects(spec, o.NS, os.CM.Labels, ns.Labels) {
							return t, true
						}
					}
				}
			}
		}
	}
	return time.Time{}, false
}

// specsInForce returns the specs a policy state may act under: its own, and
// while it is not Ready, or its Ready condition is about an earlier
// generation (the controller has not judged this spec yet, and serves the
// version before until it has), the version its status says stays in force
// (status.servedSpec: docs/controller.md, "a policy that cannot be served
// leaves the version served before it in force").
func specsInForce(ps polState) []teardownv1alpha1.TeardownPolicySpec {
	specs := []teardownv1alpha1.TeardownPolicySpec{ps.Spec}
	judged := false
	if c := meta.FindStatusCondition(ps.Status.Conditions, teardownv1alpha1.ReadyCondition); c != nil {
		judged = c.ObservedGeneration == ps.Gen
	}
	if (!ps.Ready || !judged) && ps.Status.ServedSpec != "" {
		var served teardownv1alpha1.TeardownPolicySpec
		if json.Unmarshal([]byte(ps.Status.ServedSpec), &served) == nil {
			specs = append(specs, served)
		}
	}
	return specs
}

// statesWithin returns the states valid at some time in [t-slack, t].
func statesWithin[S any](states []S, t time.Time, at func(S) time.Time) []S {
	var out []S
	for i, s := range states {
		if at(s).After(t) {
			break
		}
		if i+1 < len(states) && !at(states[i+1]).After(t.Add(-slack)) {
			continue // replaced before the window
		}
		out = append(out, s)
	}
	return out
}

// stateAt returns the last state at or before t.
func stateAt[S any](states []S, t time.Time, at func(S) time.Time) (S, bool) {
	var cur S
	ok := false
	for _, s := range states {
		if at(s).After(t) {
			break
		}
		cur, ok = s, true
	}
	return cur, ok
}
