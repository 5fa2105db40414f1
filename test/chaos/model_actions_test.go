/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// action is one thing the generator may do; do says what it did.
type action struct {
	name   string
	weight float64
	do     func(ctx context.Context) (string, error)
}

func (m *modelRun) actions() []action {
	return []action{
		{"create-object", 20, m.createObject},
		{"label-object", 12, m.labelObject},
		{"delete-object", 14, m.deleteObject},
		{"forge-records", 7, m.forgeRecords},
		{"declare-key", 6, m.declareKey},
		{"create-policy", 7, m.createPolicy},
		{"edit-policy", 10, m.editPolicy},
		{"delete-policy", 4, m.deletePolicy},
		{"flip-receiver", 7, m.flipReceiver},
		{"relabel-namespace", 3, m.relabelNamespace},
		{"delete-namespace", 1.2, m.deleteNamespace},
		{"burst-policies", 0.8, m.burstPolicies},
		{"probe", 1.5, m.probeDuringRun},
	}
}

// noteWrite remembers a ConfigMap write of the generator by its
// resourceVersion, so the checker can tell a key a tenant wrote from one
// the controller attached.
func (m *modelRun) noteWrite(obj client.Object) {
	m.genWrites[obj.GetResourceVersion()] = true
}

func (m *modelRun) createObject(ctx context.Context) (string, error) {
	if len(m.liveObjects()) >= 40 {
		return m.deleteObject(ctx)
	}
	ns := pick(m.rng, m.liveNamespaces())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%s-%04d", m.run, m.next())}}
	if m.rng.Float64() < 0.85 {
		cm.Labels = map[string]string{"app": pick(m.rng, appValues)}
	}
	if m.rng.Float64() < 0.25 {
		pool := m.keyPool(ns)
		for range 1 + m.rng.IntN(2) {
			if k := pick(m.rng, pool); !slices.Contains(cm.Finalizers, k) {
				cm.Finalizers = append(cm.Finalizers, k)
			}
		}
	}
	large := m.rng.Float64() < 0.05
	switch {
	case large:
		cm.Annotations = map[string]string{fillerKey: filler}
		m.counts["large-object"]++
	case m.rng.Float64() < 0.2:
		cm.Annotations = m.forgedRecords(ns, "")
	}
	if err := k8s.Create(ctx, cm); err != nil {
		return "create " + ns + "/" + cm.Name, err
	}
	m.noteWrite(cm)
	m.objs = append(m.objs, &genObj{NS: ns, Name: cm.Name, UID: cm.UID, Large: large})
	return fmt.Sprintf("create %s/%s labels=%v finalizers=%v records=%v", ns, cm.Name, cm.Labels, cm.Finalizers, keysOf(cm.Annotations)), nil
}

func (m *modelRun) labelObject(ctx context.Context) (string, error) {
	objs := m.existingObjects()
	if len(objs) == 0 {
		return m.createObject(ctx)
	}
	o := pick(m.rng, objs)
	var app any = pick(m.rng, appValues)
	if m.rng.Float64() < 0.15 {
		app = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": app}}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.NS, Name: o.Name}}
	err := k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	if err == nil {
		m.noteWrite(cm)
	}
	return fmt.Sprintf("label %s/%s app=%v (deleting: %v)", o.NS, o.Name, app, o.Deleted), err
}

func (m *modelRun) deleteObject(ctx context.Context) (string, error) {
	objs := m.liveObjects()
	if len(objs) == 0 {
		return m.createObject(ctx)
	}
	o := pick(m.rng, objs)
	o.Deleted = true
	err := k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.NS, Name: o.Name}})
	return "delete " + o.NS + "/" + o.Name, err
}

// forgeRecords writes records a tenant made up on one of its objects, at
// UPDATE: it could read the object, so some are bound to its UID.
func (m *modelRun) forgeRecords(ctx context.Context) (string, error) {
	objs := m.existingObjects()
	if len(objs) == 0 {
		return m.createObject(ctx)
	}
	o := pick(m.rng, objs)
	recs := m.forgedRecords(o.NS, o.UID)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": recs}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.NS, Name: o.Name}}
	err := k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	if err == nil {
		m.noteWrite(cm)
	}
	return fmt.Sprintf("forge %s/%s %v (deleting: %v)", o.NS, o.Name, recs, o.Deleted), err
}

// declareKey adds a key to a live object, as its tenant may at UPDATE,
// with a JSON patch that tests the list it read (so it never puts back a
// key the controller removed meanwhile).
func (m *modelRun) declareKey(ctx context.Context) (string, error) {
	objs := m.liveObjects()
	if len(objs) == 0 {
		return m.createObject(ctx)
	}
	o := pick(m.rng, objs)
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: o.NS, Name: o.Name}, cm); err != nil {
		return "declare on " + o.Name, err
	}
	key := pick(m.rng, m.keyPool(o.NS))
	if cm.DeletionTimestamp != nil || slices.Contains(cm.Finalizers, key) {
		return "declare on " + o.Name + ": nothing to do", nil
	}
	var ops []map[string]any
	if cm.Finalizers == nil {
		ops = []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": cm.ResourceVersion},
			{"op": "add", "path": "/metadata/finalizers", "value": []string{key}}}
	} else {
		ops = []map[string]any{{"op": "test", "path": "/metadata/finalizers", "value": cm.Finalizers},
			{"op": "add", "path": "/metadata/finalizers/-", "value": key}}
	}
	patch, _ := json.Marshal(ops)
	err := k8s.Patch(ctx, cm, client.RawPatch(types.JSONPatchType, patch))
	if err == nil {
		m.noteWrite(cm)
	}
	return fmt.Sprintf("declare %s on %s/%s", key, o.NS, o.Name), err
}

func (m *modelRun) createPolicy(ctx context.Context) (string, error) {
	if len(m.livePolicies("")) >= 8 {
		return m.editPolicy(ctx)
	}
	p := &genPol{Kind: "TeardownPolicy", NS: pick(m.rng, m.liveNamespaces())}
	if m.rng.Float64() < 0.3 && len(m.livePolicies("ClusterTeardownPolicy")) < 3 {
		p = &genPol{Kind: "ClusterTeardownPolicy", Name: fmt.Sprintf("cp-%s-%03d", m.run, m.next())}
	} else {
		p.Name = fmt.Sprintf("tp-%s-%03d", m.run, m.next())
	}
	spec := m.policySpec(p)
	obj := p.object()
	switch o := obj.(type) {
	case *teardownv1alpha1.TeardownPolicy:
		o.Spec = spec
	case *teardownv1alpha1.ClusterTeardownPolicy:
		o.Spec = spec
	}
	sent := time.Now()
	if err := k8s.Create(ctx, obj); err != nil {
		return "create " + p.id(), err
	}
	m.notePolicyWrite(obj, sent)
	p.UID = obj.GetUID()
	m.pols = append(m.pols, p)
	return "create " + p.id() + " " + specString(spec), nil
}

func (m *modelRun) editPolicy(ctx context.Context) (string, error) {
	pols := m.livePolicies("")
	if m.rng.Float64() < 0.1 {
		pols = m.pols // a deleted policy may still be there, Terminating
	}
	if len(pols) == 0 {
		return m.createPolicy(ctx)
	}
	p := pick(m.rng, pols)
	what := ""
	err := m.updatePolicy(ctx, p, func(s *teardownv1alpha1.TeardownPolicySpec) {
		switch r := m.rng.Float64(); {
		case r < 0.3:
			s.Finalizer, what = m.keyFor(p), "key"
		case r < 0.5:
			s.Targets[0].Selector, what = m.selector(), "selector"
			if p.Kind == "ClusterTeardownPolicy" && m.rng.Float64() < 0.5 {
				s.Targets[0].NamespaceSelector, what = m.namespaceSelector(), "selector and namespaceSelector"
			}
		case r < 0.75:
			s.Steps, what = m.steps(p), "steps"
		case r < 0.85:
			what = "onPolicyDeletion"
			s.OnPolicyDeletion = teardownv1alpha1.PolicyDeletionRelease
			if m.rng.Float64() < 0.5 {
				s.OnPolicyDeletion = teardownv1alpha1.PolicyDeletionFinish
			}
		case r < 0.95:
			what = "deadline"
			s.Deadline, s.OnDeadline = durationPtr(time.Duration(8+m.rng.IntN(20))*time.Second), teardownv1alpha1.DeadlineRelease
			if m.rng.Float64() < 0.4 {
				s.Deadline, s.OnDeadline = nil, ""
			}
		default:
			what = "attach"
			s.Attach = teardownv1alpha1.AttachDeclared
			if m.rng.Float64() < 0.5 {
				s.Attach = teardownv1alpha1.AttachAutomatic
			}
		}
		what += ": " + specString(*s)
	})
	return fmt.Sprintf("edit %s (deleted: %v) %s", p.id(), p.Deleted, what), err
}

func (m *modelRun) deletePolicy(ctx context.Context) (string, error) {
	pols := m.livePolicies("")
	if len(pols) == 0 {
		return m.createPolicy(ctx)
	}
	p := pick(m.rng, pols)
	p.Deleted = true
	m.polWrites[string(p.UID)+"/deleted"] = polWrite{At: time.Now()}
	return "delete " + p.id(), k8s.Delete(ctx, p.object())
}

func (m *modelRun) flipReceiver(ctx context.Context) (string, error) {
	if len(m.pols) == 0 {
		return m.createPolicy(ctx)
	}
	p, step, b := pick(m.rng, m.pols), pick(m.rng, stepNames), m.behaviour()
	m.behaviourSet[p.id()+"/"+step] = true
	m.hooks.set(p.id(), step, b)
	return fmt.Sprintf("receiver %s step %s now answers %s (n=%d)", p.id(), step, b.Mode, b.N), nil
}

func (m *modelRun) relabelNamespace(ctx context.Context) (string, error) {
	ns, tier := pick(m.rng, m.tenants), pick(m.rng, tiers)
	return "namespace " + ns + " tier=" + tier, m.setTier(ctx, ns, tier)
}

// deleteNamespace deletes a tenant's namespace (its objects and policies
// with it) and gives the tenant a new one.
func (m *modelRun) deleteNamespace(ctx context.Context) (string, error) {
	i := m.rng.IntN(len(m.tenants))
	ns := m.tenants[i]
	if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
		return "delete namespace " + ns, err
	}
	for _, o := range m.objs {
		if o.NS == ns {
			o.Deleted = true
		}
	}
	for _, p := range m.pols {
		if p.NS == ns {
			p.Deleted = true
		}
	}
	m.tenants[i] = m.newTenant(ctx)
	return "delete namespace " + ns + "; new tenant namespace " + m.tenants[i], nil
}

func (m *modelRun) newTenant(ctx context.Context) string {
	ns := newNamespace(m.t)
	m.namespaces = append(m.namespaces, ns)
	if err := m.setTier(ctx, ns, pick(m.rng, tiers)); err != nil {
		m.t.Fatalf("labelling namespace %s: %v", ns, err)
	}
	return ns
}

// existingObjects are the objects the generator made and may still be
// there (being deleted or not).
func (m *modelRun) existingObjects() []*genObj {
	var out []*genObj
	for _, o := range m.objs {
		if !o.Deleted || m.rng.Float64() < 0.5 {
			out = append(out, o)
		}
	}
	return out
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// specString is a short account of a spec for the step log.
func specString(s teardownv1alpha1.TeardownPolicySpec) string {
	var steps []string
	for _, st := range s.Steps {
		d := st.Name + ":" + string(st.OnFailure)
		if st.Timeout != nil {
			d += "/" + st.Timeout.Duration.String()
		}
		steps = append(steps, d)
	}
	t := s.Targets[0]
	sel, _ := metav1.LabelSelectorAsSelector(t.Selector)
	out := fmt.Sprintf("key=%q attach=%s selector=%q steps=%v onPolicyDeletion=%s", s.Finalizer, s.Attach, sel.String(), steps, s.OnPolicyDeletion)
	if t.NamespaceSelector != nil {
		out += fmt.Sprintf(" namespaceSelector=%v", t.NamespaceSelector.MatchLabels)
	}
	if s.Deadline != nil {
		out += fmt.Sprintf(" deadline=%s/%s", s.Deadline.Duration, s.OnDeadline)
	}
	return out
}
