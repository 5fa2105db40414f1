/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// The generator's vocabulary: small pools, so that keys, selectors and
// labels collide.
var (
	appValues  = []string{"web", "db", "cache"}
	tiers      = []string{"gold", "silver"}
	stepNames  = []string{"a", "b", "c", "d"}
	foreignKey = "platform.example.com/protect"
	sharedKeys = []string{"example.com/shared", "example.com/shared-2"}
)

// genObj and genPol are the generator's own memory of what it made; the
// checker never reads them.
type genObj struct {
	NS, Name string
	UID      types.UID
	Deleted  bool
	Large    bool // its annotations fill the API server's limit (fillerKey)
}

type genPol struct {
	Kind, NS, Name string
	UID            types.UID
	Deleted        bool
}

func (p *genPol) id() string { return policyID(p.Kind, p.NS, p.Name) }

func (p *genPol) object() client.Object {
	if p.Kind == "ClusterTeardownPolicy" {
		return &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}
	}
	return &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: p.NS, Name: p.Name}}
}

// pick returns a random element of list.
func pick[T any](rng *rand.Rand, list []T) T { return list[rng.IntN(len(list))] }

func durationPtr(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// selector returns one of a few label selectors over appValues.
func (m *modelRun) selector() *metav1.LabelSelector {
	switch m.rng.IntN(5) {
	case 0:
		return &metav1.LabelSelector{}
	case 1:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}}
	default:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick(m.rng, appValues)}}
	}
}

// namespaceSelector keeps a cluster policy to the run's namespaces (a run
// never sees another's objects), half the time to one tier of them.
func (m *modelRun) namespaceSelector() *metav1.LabelSelector {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"model-run": m.run}}
	if m.rng.Float64() < 0.5 {
		sel.MatchLabels["tier"] = pick(m.rng, tiers)
	}
	return sel
}

// keyFor picks a policy's key: its default most often, else one that
// collides with a namesake's, a cluster policy's or another operator's.
func (m *modelRun) keyFor(p *genPol) string {
	r := m.rng.Float64()
	switch {
	case r < 0.45:
		return ""
	case r < 0.75:
		return pick(m.rng, sharedKeys)
	case r < 0.85 && p.Kind == "TeardownPolicy":
		if cp := m.livePolicies("ClusterTeardownPolicy"); len(cp) > 0 {
			return "teardown.dev/" + pick(m.rng, cp).Name
		}
		return foreignKey
	case r < 0.92:
		return foreignKey
	}
	return "platform.example.com/guard"
}

// policySpec makes a spec for p, and chooses how its receivers answer.
func (m *modelRun) policySpec(p *genPol) teardownv1alpha1.TeardownPolicySpec {
	spec := teardownv1alpha1.TeardownPolicySpec{Finalizer: m.keyFor(p)}
	if m.rng.Float64() < 0.2 {
		spec.Attach = teardownv1alpha1.AttachDeclared
	}
	target := teardownv1alpha1.Target{APIVersion: "v1", Kind: "ConfigMap", Selector: m.selector()}
	if p.Kind == "ClusterTeardownPolicy" {
		target.NamespaceSelector = m.namespaceSelector()
	}
	spec.Targets = []teardownv1alpha1.Target{target}
	spec.Steps = m.steps(p)
	if m.rng.Float64() < 0.25 {
		spec.Deadline = durationPtr(time.Duration(8+m.rng.IntN(20)) * time.Second)
		spec.OnDeadline = pick(m.rng, []teardownv1alpha1.DeadlineAction{teardownv1alpha1.DeadlineBlock, teardownv1alpha1.DeadlineRelease})
	}
	if m.rng.Float64() < 0.4 {
		spec.OnPolicyDeletion = teardownv1alpha1.PolicyDeletionRelease
	}
	return spec
}

// steps makes 1 to 3 webhook steps; a step name new to p gets a behaviour.
func (m *modelRun) steps(p *genPol) []teardownv1alpha1.Step {
	names := slices.Clone(stepNames)
	m.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	var out []teardownv1alpha1.Step
	for _, name := range names[:1+m.rng.IntN(3)] {
		onFailure := teardownv1alpha1.FailureRetry
		switch r := m.rng.Float64(); {
		case r < 0.2:
			onFailure = teardownv1alpha1.FailureContinue
		case r < 0.4:
			onFailure = teardownv1alpha1.FailureRelease
		}
		var timeout time.Duration
		if m.rng.Float64() < 0.2 {
			timeout = time.Duration(3+m.rng.IntN(5)) * time.Second
		}
		out = append(out, m.hooks.step(p.id(), name, onFailure, timeout))
		if !m.behaviourSet[p.id()+"/"+name] {
			m.behaviourSet[p.id()+"/"+name] = true
			m.hooks.set(p.id(), name, m.behaviour())
		}
	}
	return out
}

func (m *modelRun) behaviour() hookBehaviour {
	switch r := m.rng.Float64(); {
	case r < 0.45:
		return hookBehaviour{Mode: hookSuccess}
	case r < 0.7:
		return hookBehaviour{Mode: hookInProgress, N: 1 + m.rng.IntN(4)}
	case r < 0.8:
		return hookBehaviour{Mode: hookFailure}
	case r < 0.92:
		return hookBehaviour{Mode: hookError}
	case r < 0.96:
		return hookBehaviour{Mode: hookDown}
	}
	return hookBehaviour{Mode: hookHang}
}

// keyPool is what a tenant of ns may write on its objects: keys of its
// own policies, shared and foreign keys, and cluster policies' keys.
func (m *modelRun) keyPool(ns string) []string {
	pool := append([]string{foreignKey, "platform.example.com/guard"}, sharedKeys...)
	for _, p := range m.pols {
		switch {
		case p.Kind == "ClusterTeardownPolicy":
			pool = append(pool, "teardown.dev/"+p.Name)
		case p.NS == ns:
			pool = append(pool, ns+".teardown.dev/"+p.Name)
		}
	}
	return pool
}

// forgedRecords are records a tenant writes on obj: progress, attached and
// step records that Teardown did not write, for keys of the pool. uid is
// the object's own UID when the tenant writes at UPDATE (it could read it),
// empty at CREATE.
func (m *modelRun) forgedRecords(ns string, uid types.UID) map[string]string {
	out := map[string]string{}
	for range 1 + m.rng.IntN(2) {
		key := pick(m.rng, m.keyPool(ns))
		name := annotationName(key)
		attached := pick(m.rng, []string{"true", "at-create", "00000000-0000-0000-0000-000000000000"})
		if uid != "" && m.rng.Float64() < 0.5 {
			attached = string(uid)
		}
		var polUID types.UID
		if len(m.pols) > 0 {
			polUID = pick(m.rng, m.pols).UID
		}
		stepRec, _ := json.Marshal(map[string]any{"object": uid, "policy": polUID, "fingerprint": "forged",
			"step": m.rng.IntN(3), "name": pick(m.rng, stepNames), "since": time.Now().UTC().Format(time.RFC3339)})
		switch m.rng.IntN(3) {
		case 0:
			out["attached.finalizer.teardown.dev/"+name] = attached
		case 1:
			out["steps.teardown.dev/"+name] = string(stepRec)
		default:
			out["progress.finalizer.teardown.dev/"+name] = fmt.Sprintf(`{"finalizer":%q,"state":"Success","attempts":1}`, key)
		}
	}
	return out
}

// annotationName is the name part of Teardown's per-key annotations (the
// key with "/" as "_"); the pools' keys are all short enough.
func annotationName(key string) string {
	out := []byte(key)
	for i, c := range out {
		if c == '/' {
			out[i] = '_'
		}
	}
	return string(out)
}

func (m *modelRun) livePolicies(kind string) []*genPol {
	var out []*genPol
	for _, p := range m.pols {
		if !p.Deleted && (kind == "" || p.Kind == kind) {
			out = append(out, p)
		}
	}
	return out
}

func (m *modelRun) liveObjects() []*genObj {
	var out []*genObj
	for _, o := range m.objs {
		if !o.Deleted {
			out = append(out, o)
		}
	}
	return out
}

// liveNamespaces are the namespaces objects may be created in.
func (m *modelRun) liveNamespaces() []string { return append([]string{m.platform}, m.tenants...) }

// updatePolicy reads p, lets edit change its spec, and writes it.
func (m *modelRun) updatePolicy(ctx context.Context, p *genPol, edit func(*teardownv1alpha1.TeardownPolicySpec)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := p.object()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		switch o := obj.(type) {
		case *teardownv1alpha1.TeardownPolicy:
			edit(&o.Spec)
		case *teardownv1alpha1.ClusterTeardownPolicy:
			edit(&o.Spec)
		}
		sent := time.Now()
		if err := k8s.Update(ctx, obj); err != nil {
			return err
		}
		m.notePolicyWrite(obj, sent)
		return nil
	})
}

// setTier sets a namespace's tier label, and the run's.
func (m *modelRun) setTier(ctx context.Context, ns, tier string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"tier": tier, "model-run": m.run}}})
	return k8s.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, client.RawPatch(types.MergePatchType, patch))
}

// polWrite is one policy write of the generator: when it was sent, and
// the spec it wrote (the API server's answer; nil for a deletion).
type polWrite struct {
	At   time.Time
	Spec *teardownv1alpha1.TeardownPolicySpec
}

// notePolicyWrite records obj, just created or updated, as written at sent.
func (m *modelRun) notePolicyWrite(obj client.Object, sent time.Time) {
	w := polWrite{At: sent}
	if p, ok := obj.(teardownv1alpha1.PolicyObject); ok {
		w.Spec = p.PolicySpec().DeepCopy()
	}
	m.polWrites[fmt.Sprintf("%s/%d", obj.GetUID(), obj.GetGeneration())] = w
}
