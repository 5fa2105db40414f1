/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// Liveness, once the generator has stopped, every receiver answers Success
// and one controller runs: every teardown still owed finishes, every live
// policy settles on a Ready condition of its generation, and in every
// namespace a new policy is served and guards and releases a new object
// (no worker is stuck).
const (
	owedBound   = 2 * time.Minute
	steadyBound = time.Minute
	probeBound  = 30 * time.Second
)

func (m *modelRun) liveness(ctx context.Context) []string {
	var vs []string
	var owed []owedKey
	start := time.Now()
	if !poll(owedBound, time.Second, func(ctx context.Context) (bool, error) {
		now, err := m.owed(ctx)
		if err != nil {
			return false, nil
		}
		owed = now
		return len(owed) == 0, nil
	}) {
		m.owedLeft = owed
	}
	m.logf("owed teardowns done after %s (%d left)", time.Since(start).Round(100*time.Millisecond), len(owed))

	var unsteady []string
	if !poll(steadyBound, time.Second, func(ctx context.Context) (bool, error) {
		a := m.readyConditions(ctx)
		time.Sleep(3 * time.Second)
		b := m.readyConditions(ctx)
		unsteady = nil
		for id, c := range b {
			if c == "" || a[id] != c {
				unsteady = append(unsteady, fmt.Sprintf("%s: %q then %q", id, a[id], c))
			}
		}
		return len(unsteady) == 0, nil
	}) {
		for _, u := range unsteady {
			vs = append(vs, "liveness-policy-not-steady: "+u)
		}
	}
	for _, ns := range m.liveNamespaces() {
		if v := m.probe(ctx, ns, false); v != "" {
			vs = append(vs, v)
		}
	}
	return vs
}

// owed lists the keys on objects being deleted that the controller owes a
// cleanup for: a policy in force with that key selects the object, or a
// policy that still exists started its teardown (its receiver was called).
// owedKey is a key an object being deleted still carries although the
// controller owes it a cleanup.
type owedKey struct {
	NS, Name string
	UID      types.UID
	Key, Why string
}

func (m *modelRun) owed(ctx context.Context) ([]owedKey, error) {
	var pols []*polHist
	nsLabels := map[string]map[string]string{}
	var out []owedKey
	for _, ns := range m.namespaces {
		nsObj := &corev1.Namespace{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
			continue
		}
		nsLabels[ns] = nsObj.Labels
		list := &teardownv1alpha1.TeardownPolicyList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, p := range list.Items {
			pols = append(pols, livePolicy("TeardownPolicy", p.ObjectMeta, p.Spec, p.Status))
		}
	}
	clusterList := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := k8s.List(ctx, clusterList); err != nil {
		return nil, err
	}
	for _, p := range clusterList.Items {
		pols = append(pols, livePolicy("ClusterTeardownPolicy", p.ObjectMeta, p.Spec, p.Status))
	}
	ledger := m.hooks.entries()
	for ns, lbls := range nsLabels {
		cms := &corev1.ConfigMapList{}
		if err := k8s.List(ctx, cms, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, cm := range cms.Items {
			if cm.DeletionTimestamp == nil {
				continue
			}
			for _, key := range cm.Finalizers {
				if why := owedBy(pols, ledger, &cm, key, lbls); why != "" {
					out = append(out, owedKey{NS: ns, Name: cm.Name, UID: cm.UID, Key: key, Why: why})
				}
			}
		}
	}
	return out, nil
}

func livePolicy(kind string, om metav1.ObjectMeta, spec teardownv1alpha1.TeardownPolicySpec, st teardownv1alpha1.TeardownPolicyStatus) *polHist {
	p := &polHist{ID: policyID(kind, om.Namespace, om.Name), Kind: kind, NS: om.Namespace, Name: om.Name, UID: om.UID}
	p.States = []polState{{Deleting: om.DeletionTimestamp != nil, Spec: spec, Status: st, Gen: om.Generation,
		Ready: meta.IsStatusConditionTrue(st.Conditions, teardownv1alpha1.ReadyCondition)}}
	return p
}

func owedBy(pols []*polHist, ledger []ledgerEntry, cm *corev1.ConfigMap, key string, nsLabels map[string]string) string {
	for _, p := range pols {
		s := p.States[0]
		if s.Ready && s.Status.Finalizer == key && p.selects(s.Spec, cm.Namespace, cm.Labels, nsLabels) {
			return p.ID + " is in force with this key and selects it"
		}
	}
	for _, e := range ledger {
		if e.UID != cm.UID || e.Finalizer != key {
			continue
		}
		if slices.ContainsFunc(pols, func(p *polHist) bool { return p.ID == e.Path }) {
			return e.Path + " started its teardown and still exists"
		}
	}
	return ""
}

// readyConditions returns each live policy's Ready condition of its
// generation ("" if it has none yet).
func (m *modelRun) readyConditions(ctx context.Context) map[string]string {
	out := map[string]string{}
	add := func(kind string, om metav1.ObjectMeta, st teardownv1alpha1.TeardownPolicyStatus) {
		if om.DeletionTimestamp != nil {
			return
		}
		c := meta.FindStatusCondition(st.Conditions, teardownv1alpha1.ReadyCondition)
		id := policyID(kind, om.Namespace, om.Name)
		out[id] = ""
		if c != nil && c.ObservedGeneration == om.Generation {
			out[id] = string(c.Status) + " " + c.Reason
		}
	}
	for _, ns := range m.liveNamespaces() {
		list := &teardownv1alpha1.TeardownPolicyList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err == nil {
			for _, p := range list.Items {
				add("TeardownPolicy", p.ObjectMeta, p.Status)
			}
		}
	}
	cl := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := k8s.List(ctx, cl); err == nil {
		for _, p := range cl.Items {
			add("ClusterTeardownPolicy", p.ObjectMeta, p.Status)
		}
	}
	return out
}

// probe creates a policy in ns and expects it served, then an object it
// guards, deleted, to go after its cleanup, each within probeBound. During
// the run (keyOnly), other policies may select the object too (a cluster
// policy's `{}` selector) and their receivers fail or hold on purpose: then
// the probe's own key leaving the object is its release.
func (m *modelRun) probe(ctx context.Context, ns string, keyOnly bool) string {
	p := &genPol{Kind: "TeardownPolicy", NS: ns, Name: fmt.Sprintf("tp-%s-%03d", m.run, m.next())}
	pol := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{configMapTarget(labels("probe", p.Name))},
			Steps:   []teardownv1alpha1.Step{m.hooks.step(p.id(), "probe", teardownv1alpha1.FailureRetry, 0)},
		}}
	if err := k8s.Create(ctx, pol); err != nil {
		return "liveness-probe: creating " + p.id() + ": " + err.Error()
	}
	start := time.Now()
	if !poll(probeBound, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		c, err := readyCondition(ctx, pol)
		return c != nil && c.Status == metav1.ConditionTrue, err
	}) {
		c, _ := readyCondition(ctx, pol)
		return fmt.Sprintf("liveness-probe-policy-not-served: %s not Ready=True within %s (condition %+v)", p.id(), probeBound, c)
	}
	ready := time.Since(start)
	key := ns + ".teardown.dev/" + p.Name
	cm := configMap(ns, fmt.Sprintf("cm-%s-%04d", m.run, m.next()), labels("probe", p.Name))
	if err := k8s.Create(ctx, cm); err != nil {
		return "liveness-probe: creating " + cm.Name + ": " + err.Error()
	}
	m.noteWrite(cm)
	if !poll(probeBound, 200*time.Millisecond, func(ctx context.Context) (bool, error) { return carries(ctx, cm, key) }) {
		return fmt.Sprintf("liveness-probe-object-not-guarded: %s/%s did not get %s within %s", ns, cm.Name, key, probeBound)
	}
	if err := k8s.Delete(ctx, cm); err != nil {
		return "liveness-probe: deleting " + cm.Name + ": " + err.Error()
	}
	if !poll(probeBound, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		fins, exists, err := finalizersOf(ctx, cm)
		return !exists || keyOnly && !slices.Contains(fins, key), err
	}) {
		fins, _, _ := finalizersOf(ctx, cm)
		return fmt.Sprintf("liveness-probe-object-not-released: %s/%s still there %s after its deletion, finalizers %v", ns, cm.Name, probeBound, fins)
	}
	m.logf("probe in %s: policy Ready in %s, object guarded and released", ns, ready.Round(10*time.Millisecond))
	return ""
}
