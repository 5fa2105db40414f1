/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

var cmKind = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func namespaced(spec teardownv1alpha1.TeardownPolicySpec) *teardownv1alpha1.TeardownPolicy {
	return &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "shop"}, Spec: spec}
}

func target(sel map[string]string) teardownv1alpha1.Target {
	return teardownv1alpha1.Target{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{MatchLabels: sel}}
}

func TestFromObjectDefaults(t *testing.T) {
	cases := map[string]struct {
		obj  interface{ GetName() string }
		want string
	}{
		"namespaced default key": {obj: namespaced(teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{target(nil)}}), want: "shop.teardown.dev/dns"},
		"cluster default key": {obj: &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns"},
			Spec: teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{target(nil)}}}, want: "teardown.dev/dns"},
		"explicit key": {obj: namespaced(teardownv1alpha1.TeardownPolicySpec{Finalizer: "my.custom/finalizer", Targets: []teardownv1alpha1.Target{target(nil)}}), want: "my.custom/finalizer"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var pol *Policy
			var err error
			switch o := tc.obj.(type) {
			case *teardownv1alpha1.TeardownPolicy:
				pol, err = FromObject(o)
			case *teardownv1alpha1.ClusterTeardownPolicy:
				pol, err = FromObject(o)
			}
			if err != nil {
				t.Fatal(err)
			}
			if pol.Key != tc.want || pol.Attach != teardownv1alpha1.AttachAutomatic || pol.OnDeadline != teardownv1alpha1.DeadlineBlock {
				t.Errorf("key %q attach %s onDeadline %s, want %q Automatic Block", pol.Key, pol.Attach, pol.OnDeadline, tc.want)
			}
		})
	}
}

func TestFromObjectReportsTheFieldAtFault(t *testing.T) {
	badSelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
	cases := map[string]struct {
		spec       teardownv1alpha1.TeardownPolicySpec
		wantReason string
		wantField  string
	}{
		"bad selector": {
			spec:       teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: badSelector}}},
			wantReason: teardownv1alpha1.InvalidSelectorReason, wantField: "spec.targets[0].selector",
		},
		"bad apiVersion": {
			spec:       teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "a/b/c", Kind: "ConfigMap"}}},
			wantReason: teardownv1alpha1.UnknownKindReason, wantField: "spec.targets[0].apiVersion",
		},
		"condition that does not compile": {
			spec: teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{target(nil)}, Steps: []teardownv1alpha1.Step{{Name: "w",
				Wait: &teardownv1alpha1.WaitAction{Condition: "size(objects) =="}}}},
			wantReason: teardownv1alpha1.InvalidConditionReason, wantField: "spec.steps[0].wait.condition",
		},
		"condition that is not a bool": {
			spec: teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{target(nil)}, Steps: []teardownv1alpha1.Step{{Name: "w",
				Wait: &teardownv1alpha1.WaitAction{Condition: "size(objects)"}}}},
			wantReason: teardownv1alpha1.InvalidConditionReason, wantField: "spec.steps[0].wait.condition",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FromObject(namespaced(tc.spec))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("FromObject = %v, want a FieldError", err)
			}
			if fe.Reason != tc.wantReason || fe.Field != tc.wantField {
				t.Errorf("FieldError %s at %s, want %s at %s", fe.Reason, fe.Field, tc.wantReason, tc.wantField)
			}
		})
	}
}

func TestConditionsEvaluate(t *testing.T) {
	prg, err := CompileCondition("objects.all(o, o.status.phase == 'Released')")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		objects []any
		want    bool
	}{
		{objects: []any{}, want: true},
		{objects: []any{map[string]any{"status": map[string]any{"phase": "Released"}}}, want: true},
		{objects: []any{map[string]any{"status": map[string]any{"phase": "Bound"}}}, want: false},
	} {
		val, _, err := prg.Eval(map[string]any{"objects": tc.objects})
		if err != nil {
			t.Fatal(err)
		}
		if val.Value() != tc.want {
			t.Errorf("condition over %v = %v, want %v", tc.objects, val.Value(), tc.want)
		}
	}
}

func TestMatches(t *testing.T) {
	nsSel := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	ns, _ := FromObject(namespaced(teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{target(map[string]string{"app": "web"})}}))
	cluster, _ := FromObject(&teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Spec: teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
			Selector: &metav1.LabelSelector{}, NamespaceSelector: nsSel}}}})
	obj := func(ns string, l map[string]string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: "x", Namespace: ns, Labels: l}
	}
	cases := map[string]struct {
		pol      *Policy
		gvk      schema.GroupVersionKind
		obj      *metav1.ObjectMeta
		nsLabels labels.Set
		want     bool
	}{
		"label and namespace match":       {pol: ns, gvk: cmKind, obj: obj("shop", map[string]string{"app": "web"}), want: true},
		"other namespace":                 {pol: ns, gvk: cmKind, obj: obj("other", map[string]string{"app": "web"}), want: false},
		"other label":                     {pol: ns, gvk: cmKind, obj: obj("shop", map[string]string{"app": "db"}), want: false},
		"other kind":                      {pol: ns, gvk: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, obj: obj("shop", map[string]string{"app": "web"}), want: false},
		"namespace selector matches":      {pol: cluster, gvk: cmKind, obj: obj("a", nil), nsLabels: labels.Set{"env": "prod"}, want: true},
		"namespace selector does not":     {pol: cluster, gvk: cmKind, obj: obj("a", nil), nsLabels: labels.Set{"env": "dev"}, want: false},
		"cluster-scoped with ns selector": {pol: cluster, gvk: cmKind, obj: obj("", nil), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.pol.Matches(tc.gvk, tc.obj, tc.nsLabels); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIndex(t *testing.T) {
	x := NewIndex()
	mk := func(kind Kind, ns, name, key string) *Served {
		pol := &Policy{Ref: Ref{Kind: kind, Namespace: ns, Name: name}, UID: types.UID(name), Key: key, Targets: []Selector{{GVK: cmKind, Selector: labels.Everything()}}, Deadline: time.Minute}
		return &Served{Policy: pol, Keys: []ServedKey{{Key: key, Kinds: pol.Kinds()}}}
	}
	b := mk(KindNamespaced, "shop", "b", "x.example.com/b")
	a := mk(KindCluster, "", "a", "x.example.com/a")
	x.Set(b)
	x.Set(a)
	var got []string
	for _, p := range x.ForKind(cmKind) {
		got = append(got, p.Ref.String())
	}
	if diff := cmp.Diff([]string{"ClusterTeardownPolicy/a", "TeardownPolicy shop/b"}, got); diff != "" {
		t.Errorf("ForKind order (-want +got):\n%s", diff)
	}
	if len(x.ForKind(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})) != 0 {
		t.Error("ForKind returned policies for a kind none targets")
	}
	a.Released.Add(3)
	edited := mk(KindCluster, "", "a", "x.example.com/a2")
	x.Set(edited)
	if got := edited.Released.Load(); got != 3 {
		t.Errorf("a new version's release count = %d, want the 3 of the version it replaced", got)
	}
	x.Delete(a.Ref)
	if _, ok := x.Get(a.Ref); ok {
		t.Error("Get found a deleted policy")
	}
}

func TestReservedKey(t *testing.T) {
	tenant := Ref{Kind: KindNamespaced, Namespace: "shop", Name: "dns"}
	cluster := Ref{Kind: KindCluster, Name: "agents"}
	for _, tc := range []struct {
		ref     Ref
		key     string
		refused bool
	}{
		{tenant, "shop.teardown.dev/dns", false},
		{tenant, "example.com/dns", false},
		{tenant, "teardown.dev/agents", true},
		{tenant, "other.teardown.dev/dns", true},
		{tenant, "shop.teardown.dev/other", true},
		{tenant, "x.shop.teardown.dev/dns", true},
		{tenant, "teardown.dev/release-guarded-objects", true},
		{tenant, "notteardown.dev/x", false},
		{cluster, "teardown.dev/agents", false},
		{cluster, "teardown.dev/other", true},
		{Ref{Kind: KindCluster, Name: "release-guarded-objects"}, "teardown.dev/release-guarded-objects", true},
	} {
		if err := ReservedKey(tc.ref, tc.key); (err != nil) != tc.refused {
			t.Errorf("ReservedKey(%s, %s) = %v, want refused=%v", tc.ref, tc.key, err, tc.refused)
		}
	}
}

func TestOwner(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	mk := func(kind Kind, ns, name, key string, created time.Time, kinds ...schema.GroupVersionKind) Claim {
		return Claim{Ref: Ref{Kind: kind, Namespace: ns, Name: name}, Created: created, Key: key, Kinds: kinds}
	}
	old := mk(KindNamespaced, "shop", "old", "x.example.com/k", t0, cmKind)
	young := mk(KindNamespaced, "shop", "young", "x.example.com/k", t0.Add(time.Minute), cmKind)
	sameAgeA := mk(KindNamespaced, "shop", "a", "x.example.com/k", t0.Add(time.Minute), cmKind)
	otherNS := mk(KindNamespaced, "other", "old", "x.example.com/k", t0.Add(-time.Hour), cmKind)
	cluster := mk(KindCluster, "", "c", "x.example.com/k", t0.Add(-time.Hour), cmKind)
	otherKind := mk(KindCluster, "", "s", "x.example.com/k", t0.Add(-2*time.Hour), secret)
	otherKey := mk(KindNamespaced, "shop", "z", "x.example.com/z", t0.Add(-time.Hour), cmKind)
	youngCluster := mk(KindCluster, "", "young-c", "x.example.com/k", t0.Add(time.Hour), cmKind)
	serving := func(c Claim) Claim { c.Serving = true; return c }
	// z-first was put in force before a-second was created, in the same
	// second.
	zFirst := serving(mk(KindNamespaced, "shop", "z-first", "x.example.com/k", t0, cmKind))
	aSecond := mk(KindNamespaced, "shop", "a-second", "x.example.com/k", t0, cmKind)
	// A retired key of an older policy, still on objects.
	retired := serving(mk(KindNamespaced, "shop", "renamed", "x.example.com/k", t0.Add(time.Hour), cmKind))
	cases := map[string]struct {
		mine Claim
		all  []Claim
		want Ref
	}{
		"the oldest owns, whatever the order seen":   {young, []Claim{young, old}, old.Ref},
		"the older one owns itself":                  {old, []Claim{young, old}, old.Ref},
		"same age: by reference":                     {young, []Claim{young, sameAgeA}, sameAgeA.Ref},
		"namespaced policies of two namespaces":      {young, []Claim{young, otherNS}, young.Ref},
		"a cluster policy overlaps every namespace":  {old, []Claim{old, cluster}, cluster.Ref},
		"no shared kind, no conflict":                {old, []Claim{old, otherKind}, old.Ref},
		"another key, no conflict":                   {old, []Claim{old, otherKey}, old.Ref},
		"alone":                                      {old, nil, old.Ref},
		"a cluster policy outranks an older tenant":  {old, []Claim{old, youngCluster}, youngCluster.Ref},
		"the tenant never outranks a cluster policy": {youngCluster, []Claim{old, youngCluster}, youngCluster.Ref},
		"in force outranks same-second by name":      {aSecond, []Claim{zFirst, aSecond}, zFirst.Ref},
		"in force outranks older":                    {old, []Claim{old, retired}, retired.Ref},
		"a cluster policy outranks one in force":     {zFirst, []Claim{zFirst, youngCluster}, youngCluster.Ref},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Owner(tc.mine, tc.all).Ref; got != tc.want {
				t.Errorf("Owner = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClaimsOf(t *testing.T) {
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "dns"},
		Spec: teardownv1alpha1.TeardownPolicySpec{Finalizer: "x.example.com/new",
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap"}}},
		Status: teardownv1alpha1.TeardownPolicyStatus{
			Finalizer: "x.example.com/old",
			Kinds:     []teardownv1alpha1.GroupVersionKind{{APIVersion: "v1", Kind: "ConfigMap"}},
			Retired:   []teardownv1alpha1.RetiredKey{{Finalizer: "x.example.com/older", GroupVersionKind: teardownv1alpha1.GroupVersionKind{APIVersion: "v1", Kind: "Secret"}}},
		},
	}
	keys := func(cs []Claim) []string {
		var out []string
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s serving=%v", c.Key, c.Serving))
		}
		return out
	}
	if diff := cmp.Diff([]string{"x.example.com/new serving=false"}, keys(ClaimsOf(pol))); diff != "" {
		t.Errorf("not Ready: only the spec claims, -want +got:\n%s", diff)
	}
	pol.Status.Conditions = []metav1.Condition{{Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}
	want := []string{"x.example.com/new serving=false", "x.example.com/old serving=true", "x.example.com/older serving=true"}
	if diff := cmp.Diff(want, keys(ClaimsOf(pol))); diff != "" {
		t.Errorf("in force: what the status records is claimed too, -want +got:\n%s", diff)
	}
	pol.Status.Finalizer = "x.example.com/new"
	if c, _ := ClaimOf(pol); !c.Serving {
		t.Error("a Ready policy whose status records its key is in force")
	}
}
