/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"errors"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// reachFixture is a cluster of four namespaces: ops holds the target, a and
// b (team red) and c (team blue) each hold a ConfigMap app=widget.
func reachFixture(t *testing.T) (*Runner, client.Client, Object) {
	t.Helper()
	var objs []client.Object
	for ns, team := range map[string]string{"ops": "", "a": "red", "b": "red", "c": "blue"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": team}}})
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "widget", Namespace: ns, UID: types.UID(ns + "-widget"), Labels: map[string]string{"app": "widget"}}})
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
	m := testMapper()
	m.(*meta.DefaultRESTMapper).Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	m.(*meta.DefaultRESTMapper).Add(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), meta.RESTScopeRoot)
	target := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: "ops", UID: "operator-uid"}}
	return &Runner{Client: c, Reader: c, Mapper: m}, c, Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: target}
}

// TestStepsReachNamespaces: where a wait or delete step looks, by the
// policy's kind and the resource's namespaceSelector. Before
// namespaceSelector a cluster policy's step on an object of namespace ops
// saw ops alone, whatever it asked.
func TestStepsReachNamespaces(t *testing.T) {
	cluster := policy.Ref{Kind: policy.KindCluster, Name: "operator-last"}
	namespaced := policy.Ref{Kind: policy.KindNamespaced, Namespace: "ops", Name: "operator-last"}
	for name, tc := range map[string]struct {
		ref               policy.Ref
		kind              string
		namespaceSelector *metav1.LabelSelector
		want              []string // namespaces whose widget the step selects
		wantScopeErr      bool
		wantErr           bool
	}{
		"cluster policy, unset: the target's namespace": {ref: cluster, want: []string{"ops"}},
		"cluster policy, {}: every namespace":           {ref: cluster, namespaceSelector: &metav1.LabelSelector{}, want: []string{"a", "b", "c", "ops"}},
		"cluster policy, labels: the matching namespaces": {
			ref: cluster, namespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "red"}}, want: []string{"a", "b"},
		},
		"cluster policy, an expression": {
			ref: cluster, namespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"blue", ""}}}},
			want: []string{"c", "ops"},
		},
		"cluster policy, labels no namespace has": {
			ref: cluster, namespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "green"}}, want: nil,
		},
		"namespaced policy, unset: its namespace": {ref: namespaced, want: []string{"ops"}},
		"namespaced policy, {}: refused":          {ref: namespaced, namespaceSelector: &metav1.LabelSelector{}, wantScopeErr: true},
		"cluster policy, a cluster-scoped kind with a namespaceSelector": {
			ref: cluster, kind: "ClusterRole", namespaceSelector: &metav1.LabelSelector{}, wantErr: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, c, target := reachFixture(t)
			res := teardownv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "widget"}}, NamespaceSelector: tc.namespaceSelector}
			if tc.kind == "ClusterRole" {
				res.APIVersion, res.Kind = "rbac.authorization.k8s.io/v1", "ClusterRole"
			}
			pol := &policy.Policy{Ref: tc.ref}

			// The delete step's list.
			list := &metav1.PartialObjectMetadataList{}
			_, err := r.listSelected(t.Context(), c, pol, res, target, list)
			var scopeErr *ScopeError
			if errors.As(err, &scopeErr) != tc.wantScopeErr || (err != nil) != (tc.wantErr || tc.wantScopeErr) {
				t.Fatalf("listSelected error = %v, want scope error %t, error %t", err, tc.wantScopeErr, tc.wantErr)
			}
			if err != nil {
				return
			}
			var got []string
			for _, o := range list.Items {
				got = append(got, o.Namespace)
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("delete step selects, -want +got:\n%s", diff)
			}

			// The wait step's read, for its default condition.
			reads, err := policy.ConditionReads(policy.DefaultCondition)
			if err != nil {
				t.Fatal(err)
			}
			_, read, err := r.readForCondition(t.Context(), c, pol, res, reads, "", target)
			if err != nil {
				t.Fatal(err)
			}
			got = nil
			for _, n := range read.names {
				got = append(got, n.Namespace)
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("wait step reads, -want +got:\n%s", diff)
			}
		})
	}
}

// TestDeleteStepAcrossNamespaces: a cluster policy's delete step with a
// namespaceSelector deletes in those namespaces only, and its message on a
// target of namespace ops names none of them (the audience rule).
func TestDeleteStepAcrossNamespaces(t *testing.T) {
	r, c, target := reachFixture(t)
	// Each widget goes once deleted, but a and b keep theirs a while.
	for _, ns := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "widget"}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Finalizers = []string{"widgets.example.com/cleanup"}
		if err := c.Update(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	d := &teardownv1alpha1.DeleteAction{Resources: []teardownv1alpha1.ResourceSelector{{
		APIVersion: "v1", Kind: "ConfigMap",
		Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "widget"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "red"}},
	}}}
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "operator-last"}, Steps: []policy.Step{{Step: teardownv1alpha1.Step{Name: "delete-widgets", Delete: d}}}}
	out := r.delete(t.Context(), pol, testKey, 0, d, target)
	if out.done || out.err != nil {
		t.Fatalf("outcome = %+v, want pending", out)
	}
	if want := "waiting for 2 object(s) to be gone: 2 objects outside namespace ops"; out.message != want {
		t.Errorf("message = %q, want %q", out.message, want)
	}
	for ns, wantGoing := range map[string]bool{"a": true, "b": true, "c": false, "ops": false} {
		cm := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "widget"}, cm); err != nil {
			t.Fatalf("widget of %s: %v", ns, err)
		}
		if going := cm.DeletionTimestamp != nil; going != wantGoing {
			t.Errorf("widget of %s being deleted = %t, want %t", ns, going, wantGoing)
		}
	}
}

// TestResourceNeedsNamespaceSelector: what a step with a namespaceSelector
// needs, or why it is refused before it is served.
func TestResourceNeedsNamespaceSelector(t *testing.T) {
	r, _, _ := reachFixture(t)
	env := NeedsEnv{Mapper: r.Mapper}
	cm := func(ns *metav1.LabelSelector) teardownv1alpha1.ResourceSelector {
		return teardownv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{}, NamespaceSelector: ns}
	}
	cluster := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "p"}}
	namespaced := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ops", Name: "p"}}
	for name, tc := range map[string]struct {
		pol        *policy.Policy
		res        teardownv1alpha1.ResourceSelector
		wantReason string
		wantVerbs  []string // verb resource, in order
	}{
		"every namespace: list the kind": {pol: cluster, res: cm(&metav1.LabelSelector{}), wantVerbs: []string{"list configmaps"}},
		"by label: list the kind and namespaces": {
			pol: cluster, res: cm(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "red"}}),
			wantVerbs: []string{"list namespaces", "list configmaps"},
		},
		"a TeardownPolicy is refused": {pol: namespaced, res: cm(&metav1.LabelSelector{}), wantReason: teardownv1alpha1.ClusterScopedKindReason},
		"a cluster-scoped kind is refused": {
			pol: cluster, res: teardownv1alpha1.ResourceSelector{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Selector: &metav1.LabelSelector{}, NamespaceSelector: &metav1.LabelSelector{}},
			wantReason: teardownv1alpha1.InvalidSelectorReason,
		},
		"a bad selector is refused": {
			pol: cluster, res: cm(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}),
			wantReason: teardownv1alpha1.InvalidSelectorReason,
		},
	} {
		t.Run(name, func(t *testing.T) {
			access, refusal := resourceNeeds(env, tc.pol, []teardownv1alpha1.ResourceSelector{tc.res}, "list")
			if got := ""; refusal != nil || tc.wantReason != "" {
				if refusal != nil {
					got = refusal.Reason
				}
				if got != tc.wantReason {
					t.Fatalf("refusal = %+v, want reason %q", refusal, tc.wantReason)
				}
				return
			}
			var verbs []string
			for _, a := range access {
				verbs = append(verbs, a.Verb+" "+a.Resource.Resource)
			}
			if diff := cmp.Diff(tc.wantVerbs, verbs); diff != "" {
				t.Errorf("access, -want +got:\n%s", diff)
			}
		})
	}
}

// TestWaitInclude: which widgets hold a cluster policy's wait step on an
// object of namespace ops, by include, and how its message names them
// (those of ops by name, the others counted) and says how many nobody is
// deleting. Only a's widget is being deleted.
func TestWaitInclude(t *testing.T) {
	for name, tc := range map[string]struct {
		include     teardownv1alpha1.WaitInclude
		onlyDeleted bool // a's and b's widgets are gone; nobody deletes the others
		clusterWide bool // the target is cluster-scoped: its readers see all
		wantDone    bool
		wantMessage string
	}{
		"All holds for every widget": {
			wantMessage: "waiting until size(objects) == 0 (4 object(s) selected: ConfigMap ops/widget and 3 objects outside namespace ops; 3 not being deleted)",
		},
		"All names every widget on a cluster-scoped target": {
			include: teardownv1alpha1.WaitIncludeAll, clusterWide: true,
			wantMessage: "waiting until size(objects) == 0 (4 object(s) selected: ConfigMap a/widget, ConfigMap b/widget, ConfigMap c/widget and 1 more; 3 not being deleted)",
		},
		"Deleting holds for the one being deleted": {
			include:     teardownv1alpha1.WaitIncludeDeleting,
			wantMessage: "waiting until size(objects) == 0 (1 object(s) being deleted: 1 object outside namespace ops)",
		},
		"Deleting with none being deleted is done": {
			include: teardownv1alpha1.WaitIncludeDeleting, onlyDeleted: true, wantDone: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, c, target := reachFixture(t)
			a := &corev1.ConfigMap{}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: "a", Name: "widget"}, a); err != nil {
				t.Fatal(err)
			}
			if !tc.onlyDeleted {
				a.Finalizers = []string{"widgets.example.com/cleanup"}
			}
			if err := c.Update(t.Context(), a); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(t.Context(), a); err != nil {
				t.Fatal(err)
			}
			if tc.onlyDeleted {
				if err := c.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "widget"}}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.clusterWide {
				target = Object{GVK: rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), Obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "widget-operator", UID: "operator-uid"}}}
			}
			w := &teardownv1alpha1.WaitAction{Include: tc.include, Resources: []teardownv1alpha1.ResourceSelector{{
				APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "widget"}}, NamespaceSelector: &metav1.LabelSelector{},
			}}}
			cond, err := policy.CompileCondition(policy.DefaultCondition)
			if err != nil {
				t.Fatal(err)
			}
			reads, err := policy.ConditionReads(policy.DefaultCondition)
			if err != nil {
				t.Fatal(err)
			}
			pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "operator-last"},
				Steps: []policy.Step{{Step: teardownv1alpha1.Step{Name: "widgets-gone", Wait: w}, Condition: cond, Reads: reads}}}
			out := r.wait(t.Context(), pol, testKey, 0, cond, w, target)
			if out.err != nil || out.done != tc.wantDone {
				t.Fatalf("outcome = %+v, want done %t", out, tc.wantDone)
			}
			if out.message != tc.wantMessage {
				t.Errorf("message = %q\n want %q", out.message, tc.wantMessage)
			}
		})
	}
}
