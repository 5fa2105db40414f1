/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// What a hostile tenant does beside the others (issue 27): receivers that
// hold every call (hookHang, in behaviour), bursts of policies sharing one
// key of its own, and objects whose annotations leave no room for
// Teardown's records. The latency probe measures, during the run, what
// another tenant waits for meanwhile.

// burstSize is how many policies one burst creates: each reconcile of the
// key's policies reads every one of them.
const burstSize = 25

// fillerKey is the annotation that fills a large object up to the API
// server's limit on annotations (256 KiB, keys and values together), so
// that the attach patch, which adds an annotation, is refused.
const fillerKey = "model.example.com/filler"

// filler leaves room for fewer bytes than the attached record's key alone.
var filler = strings.Repeat("x", 256*1024-len(fillerKey)-16)

// burstPolicies creates burstSize TeardownPolicies in a tenant's namespace,
// sharing the key <ns>.example.com/burst and selecting no object
// (app=burst), or deletes the burst made there before.
func (m *modelRun) burstPolicies(ctx context.Context) (string, error) {
	ns := pick(m.rng, m.tenants)
	if names := m.bursts[ns]; len(names) > 0 {
		delete(m.bursts, ns)
		var failed int
		for _, name := range names {
			p := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if err := k8s.Delete(ctx, p); err != nil {
				failed++
			}
		}
		return fmt.Sprintf("delete the burst of %d policies in %s (%d refused)", len(names), ns, failed), nil
	}
	key := ns + ".example.com/burst"
	var names []string
	for range burstSize {
		p := &genPol{Kind: "TeardownPolicy", NS: ns, Name: fmt.Sprintf("tp-%s-%03d", m.run, m.next())}
		pol := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name},
			Spec: teardownv1alpha1.TeardownPolicySpec{Finalizer: key,
				Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", "burst"))},
				Steps:   []teardownv1alpha1.Step{m.hooks.step(p.id(), "burst", teardownv1alpha1.FailureRetry, 0)}}}
		if err := k8s.Create(ctx, pol); err != nil {
			return fmt.Sprintf("burst of policies in %s: %d created", ns, len(names)), err
		}
		names = append(names, p.Name)
	}
	m.bursts[ns] = names
	return fmt.Sprintf("burst of %d policies sharing %s in %s", len(names), key, ns), nil
}

// probeDuringRun is the latency probe of docs/chaos.md: in one namespace, a
// new policy served, an object it selects guarded, then released after its
// deletion, each within probeBound, while the other tenants do their worst.
// It is not run while two replicas are under leader election (a failover
// takes the lease's 15 s by design).
func (m *modelRun) probeDuringRun(ctx context.Context) (string, error) {
	if !m.quiet {
		return m.createObject(ctx)
	}
	ns := pick(m.rng, m.liveNamespaces())
	start := time.Now()
	if v := m.probe(ctx, ns, true); v != "" {
		m.lateProbes = append(m.lateProbes, "latency-"+v)
		return "probe in " + ns + ": " + v, nil
	}
	d := time.Since(start)
	m.probeTimes = append(m.probeTimes, d)
	return fmt.Sprintf("probe in %s: served, guarded and released in %s", ns, d.Round(10*time.Millisecond)), nil
}

// trimLarge removes the filler from every large object left, as its tenant
// would once told (the ProgressRefused and AttachRefused Events): a
// deletion that could not record its progress stays held by design, and
// goes on once there is room.
func (m *modelRun) trimLarge(ctx context.Context) {
	patch := []byte(`{"metadata":{"annotations":{"` + fillerKey + `":null}}}`)
	for _, o := range m.objs {
		if !o.Large {
			continue
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.NS, Name: o.Name}}
		if err := k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err == nil {
			m.noteWrite(cm)
			m.logf("trim %s/%s", o.NS, o.Name)
		}
	}
}
