/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/inuse"
	"github.com/teardown-dev/teardown/internal/policy"
)

func TestAudienceOf(t *testing.T) {
	obj := func(ns, name string) metav1.Object { return &metav1.ObjectMeta{Namespace: ns, Name: name} }
	cases := []struct {
		name string
		gvk  schema.GroupVersionKind
		obj  metav1.Object
		want Audience
	}{
		{"an object of a namespace is read there", rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), obj("a", "rb"), Audience{Namespace: "a"}},
		{"a Namespace is read by its own readers", corev1.SchemeGroupVersion.WithKind("Namespace"), obj("", "a"), Audience{Namespace: "a"}},
		{"another cluster-scoped object is read at cluster level", rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), obj("", "view"), Audience{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, AudienceOf(tc.gvk, tc.obj)); diff != "" {
				t.Errorf("AudienceOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarizeFor(t *testing.T) {
	cm := func(ns, name string) mention { return mention{namespace: ns, text: "ConfigMap " + ns + "/" + name} }
	cr := func(name string) mention { return mention{text: "ClusterRole " + name} }
	cases := []struct {
		name string
		a    Audience
		objs []mention
		want string
	}{
		{"all inside, named", Audience{Namespace: "a"}, []mention{cm("a", "x"), cm("a", "y")}, "ConfigMap a/x and ConfigMap a/y"},
		{"cluster-scoped objects are counted", Audience{Namespace: "a"}, []mention{cm("a", "x"), cr("admin"), cr("view")},
			"ConfigMap a/x and 2 objects outside namespace a"},
		{"only outside", Audience{Namespace: "a"}, []mention{cm("b", "x")}, "1 object outside namespace a"},
		{"a few named, more inside, some outside", Audience{Namespace: "a"},
			[]mention{cm("a", "1"), cm("b", "2"), cm("a", "3"), cm("a", "4"), cm("a", "5"), cm("a", "6"), cr("x")},
			"ConfigMap a/1, ConfigMap a/3, ConfigMap a/4, 2 more and 2 objects outside namespace a"},
		{"cluster-level readers see every name", Audience{}, []mention{cm("a", "x"), cm("b", "y"), cr("view"), cm("c", "z")},
			"ConfigMap a/x, ConfigMap b/y, ClusterRole view and 1 more"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.a.summarizeFor(tc.objs)); diff != "" {
				t.Errorf("summarizeFor (-want +got):\n%s", diff)
			}
		})
	}
}

// An API error about an object the reader may not see names it ("jobs
// \"x\" is forbidden"): only its reason is told, and it stays wrapped.
func TestHide(t *testing.T) {
	err := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "teardown-0123", errors.New("no"))
	a := Audience{Namespace: "a"}
	cases := []struct {
		name, ns string
		err      error
		want     string
	}{
		{"inside: as it is", "a", err, err.Error()},
		{"outside: the reason only", "ops", err, "the API server answered Forbidden"},
		{"outside, not from the API server", "ops", errors.New("dial tcp: teardown-0123"), "the request failed (its error is not shown: it names the object)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := a.hide(tc.ns, tc.err)
			if diff := cmp.Diff(tc.want, got.Error()); diff != "" {
				t.Errorf("hide (-want +got):\n%s", diff)
			}
			if !errors.Is(got, tc.err) {
				t.Error("the hidden error no longer wraps the original")
			}
		})
	}
}

// usedBy is an index of pods that answers use for every object.
type usedBy struct{ use *inuse.Use }

func (usedBy) Activate() {}
func (x usedBy) Check(inuse.Waiter, schema.GroupKind, string, string, string) (*inuse.Use, error) {
	return x.use, nil
}
func (usedBy) Recheck(inuse.Waiter, time.Duration) {}

// TestMessagesNameOnlyWhatTheirReaderCouldList: what a ClusterTeardownPolicy's
// pending steps say lands on the target, in the progress annotation and
// the Events of its namespace, read by that namespace's tenant. It names
// the objects of that namespace and counts the others: pods of another
// namespace that use a tenant's RoleBinding (issue 16), cluster-scoped
// objects a delete step waits for, a Job in the policy's own namespace.
// On a cluster-scoped target, read at cluster level, everything is named.
func TestMessagesNameOnlyWhatTheirReaderCouldList(t *testing.T) {
	pod := func(ns, name, owner string) *inuse.Pod {
		p := &inuse.Pod{Namespace: ns, Name: name}
		if owner != "" {
			p.OwnerKind, p.OwnerName = "Deployment", owner
		}
		return p
	}
	use := &inuse.Use{Pods: []*inuse.Pod{pod("a", "web-0", "web"), pod("b", "billing-0", "billing"), pod("b", "billing-1", "billing"), pod("c", "debug", "")}}
	labels := map[string]string{"leftover": "true"}
	leftovers := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cache", Labels: labels, Finalizers: []string{"example.com/hold"}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "secret-admin", Labels: labels, Finalizers: []string{"example.com/hold"}}},
	}
	selectAll := &metav1.LabelSelector{MatchLabels: labels}
	deleteStep := teardownv1alpha1.Step{Name: "leftovers", Delete: &teardownv1alpha1.DeleteAction{Resources: []teardownv1alpha1.ResourceSelector{
		{APIVersion: "v1", Kind: "ConfigMap", Selector: selectAll},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Selector: selectAll},
	}}}
	jobStep := teardownv1alpha1.Step{Name: "drain", Job: &teardownv1alpha1.JobAction{Namespace: "ops", Template: teardownv1alpha1.JobTemplate{
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "drain:1"}}}}}}}}

	tenantBinding := Object{GVK: rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		Obj: &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "read-billing", UID: "rb-uid"}}}
	clusterBinding := Object{GVK: rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
		Obj: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-billing", UID: "crb-uid"}}}
	cases := []struct {
		name   string
		step   teardownv1alpha1.Step
		target Object
		want   string
	}{
		{"unused, a tenant's RoleBinding: the pods of other namespaces counted", unusedStep(), tenantBinding,
			"step pods-gone: pod a/web-0 of Deployment a/web and 3 pods outside namespace a still run as a subject of this RoleBinding"},
		{"unused, a ClusterRoleBinding: every pod named", unusedStep(), clusterBinding,
			"step pods-gone: 2 pods of Deployment b/billing, pod a/web-0 of Deployment a/web and pod c/debug still run as a subject of this ClusterRoleBinding"},
		{"delete, a tenant's object: cluster-scoped leftovers counted", deleteStep, tenantBinding,
			"step leftovers: waiting for 2 object(s) to be gone: ConfigMap a/cache and 1 object outside namespace a"},
		{"delete, a cluster-scoped object: every leftover named", deleteStep, clusterBinding,
			"step leftovers: waiting for 2 object(s) to be gone: ConfigMap a/cache and ClusterRole secret-admin"},
		{"job in the policy's namespace, a tenant's object: not named", jobStep, tenantBinding,
			"step drain: a Job outside namespace a is running"},
		{"job, a cluster-scoped object: named", jobStep, clusterBinding,
			"step drain: Job ops/" + JobName("cluster-policy-uid", "crb-uid", "drain") + " is running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pol := newClusterPolicy(t, tc.step)
			objs := append([]client.Object{tc.target.Obj}, leftovers...)
			for _, uid := range []string{"rb-uid", "crb-uid"} {
				objs = append(objs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: JobName("cluster-policy-uid", uid, "drain")}})
			}
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
			r := &Runner{Client: c, Reader: c, Mapper: audienceMapper(), Uses: usedBy{use}}
			res := r.Run(t.Context(), pol, "teardown.dev/held", tc.target)
			if diff := cmp.Diff(tc.want, res.Reason); diff != "" {
				t.Errorf("pending message (-want +got):\n%s", diff)
			}
		})
	}
}

func unusedStep() teardownv1alpha1.Step {
	return teardownv1alpha1.Step{Name: "pods-gone", Unused: &teardownv1alpha1.UnusedAction{}}
}

func newClusterPolicy(t *testing.T, steps ...teardownv1alpha1.Step) *policy.Policy {
	t.Helper()
	pol, err := policy.FromObject(&teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "held", UID: "cluster-policy-uid"},
		Spec:       teardownv1alpha1.TeardownPolicySpec{Steps: steps},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// audienceMapper knows ConfigMaps and ClusterRoles.
func audienceMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), meta.RESTScopeRoot)
	return m
}
