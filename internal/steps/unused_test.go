/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/inuse"
	"github.com/teardown-dev/teardown/internal/queuekey"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func TestUnusedMessagesChanged(t *testing.T) {
	var m unusedMessages
	w := inuse.Waiter{}
	now := time.Now()
	for i, step := range []struct {
		msg  string
		want bool
	}{{"2 pods", true}, {"2 pods", false}, {"1 pod", true}, {"1 pod", false}} {
		if got := m.changed(w, step.msg, now); got != step.want {
			t.Errorf("call %d (%q): changed = %v, want %v", i, step.msg, got, step.want)
		}
	}
	m.forget(w)
	if !m.changed(w, "1 pod", now) {
		t.Error("a forgotten target's message did not count as changed")
	}
}

// laggingIndex is an index of pods that has not seen any pod yet: what the
// controller's informers are for a moment after a pod is created.
type laggingIndex struct{ rechecks []time.Duration }

func (*laggingIndex) Activate() {}
func (*laggingIndex) Check(inuse.Waiter, schema.GroupKind, string, string, string) (*inuse.Use, error) {
	return &inuse.Use{}, nil
}
func (x *laggingIndex) Recheck(_ inuse.Waiter, d time.Duration) { x.rechecks = append(x.rechecks, d) }

// An index that lags behind the API server must not end the step: a pod
// created just before its ConfigMap was deleted holds it although the index
// has not seen the pod.
func TestUnusedConfirmsWithTheAPIServer(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-0", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
		}}}},
	}
	pol := newPolicy(t, "uid-1", teardownv1alpha1.Step{Name: "unused", Unused: &teardownv1alpha1.UnusedAction{}})

	f := newFixture(t, interceptor.Funcs{}, pod)
	index := &laggingIndex{}
	f.runner.Uses = index
	res := f.run(t, pol)
	if res.State != finalizer.StatePending || !strings.Contains(res.Reason, "pod ns/agent-0") {
		t.Fatalf("with a pod the index has not seen, the step's result is %+v, want pending on pod ns/agent-0", res)
	}
	if diff := cmp.Diff([]time.Duration{unusedLagRecheck}, index.rechecks); diff != "" {
		t.Errorf("rechecks (-want +got):\n%s", diff)
	}

	if err := f.client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if res := f.run(t, pol); res.State != finalizer.StateDone {
		t.Fatalf("with no pod left, the step's result is %+v, want done", res)
	}
}

// coverage is the in-use webhook's coverage of one namespace, not stored
// until since is set.
type coverage struct {
	since time.Time
	err   error
	asked []string
}

func (c *coverage) Cover(ns string, _ queuekey.Request) (time.Time, error) {
	c.asked = append(c.asked, ns)
	return c.since, c.err
}

// TestUnusedWaitsForTheWebhookCoverage: with the in-use webhook, a target
// no pod uses is confirmed unused only once the webhook's configuration
// covers its namespace, and a grace after that (pods the API server did not
// ask the webhook about are stored by then).
func TestUnusedWaitsForTheWebhookCoverage(t *testing.T) {
	pol := newPolicy(t, "uid-1", teardownv1alpha1.Step{Name: "unused", Unused: &teardownv1alpha1.UnusedAction{}})
	f := newFixture(t, interceptor.Funcs{})
	// Deleted an hour ago: only the coverage makes the step wait.
	if err := f.client.Delete(t.Context(), f.target.Obj); err != nil {
		t.Fatal(err)
	}
	if err := f.client.Get(t.Context(), client.ObjectKeyFromObject(f.target.Obj), f.target.Obj); err != nil {
		t.Fatal(err)
	}
	f.clock.now = f.target.Obj.GetDeletionTimestamp().Add(time.Hour)
	f.runner.Uses = &laggingIndex{}
	f.runner.UnusedGrace = 5 * time.Second
	cover := &coverage{err: errors.New("ValidatingWebhookConfiguration teardown-refuse-new-uses has no webhook named inuse.teardown.dev")}
	f.runner.Coverage = cover

	res := f.run(t, pol)
	if res.State != finalizer.StatePending || !strings.Contains(res.Reason, "waiting for the in-use webhook to check new pods of namespace ns") ||
		!strings.Contains(res.Reason, cover.err.Error()) {
		t.Fatalf("before the coverage, the step's result is %+v, want pending on the webhook's coverage, with its error", res)
	}
	if diff := cmp.Diff([]string{"ns"}, cover.asked); diff != "" {
		t.Errorf("namespaces asked for (-want +got):\n%s", diff)
	}

	cover.since, cover.err = f.clock.Now(), nil
	f.clock.advance(4 * time.Second)
	if res := f.run(t, pol); res.State != finalizer.StatePending || !strings.Contains(res.Reason, "waiting 5s") {
		t.Fatalf("4s after the coverage, the step's result is %+v, want pending for the rest of the grace", res)
	}
	f.clock.advance(time.Second + time.Millisecond)
	if res := f.run(t, pol); res.State != finalizer.StateDone {
		t.Fatalf("a grace after the coverage, the step's result is %+v, want done", res)
	}
}

func TestConfirmUnused(t *testing.T) {
	podAs := func(ns, name, sa string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "c"}}},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	clusterRole := schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"}
	role := schema.GroupKind{Group: rbacv1.GroupName, Kind: "Role"}
	serviceAccount := schema.GroupKind{Kind: "ServiceAccount"}
	crb := func(name string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "agent"}, Subjects: subjects}
	}
	for _, tc := range []struct {
		name           string
		objs           []client.Object
		gk             schema.GroupKind
		ns, obj, scope string
		wantPods       []string
	}{{
		name: "a ServiceAccount's running pod", gk: serviceAccount, ns: "ns", obj: "agent",
		objs:     []client.Object{podAs("ns", "a", "agent", corev1.PodRunning), podAs("ns", "b", "other", corev1.PodRunning)},
		wantPods: []string{"ns/a"},
	}, {
		name: "a finished pod holds nothing", gk: serviceAccount, ns: "ns", obj: "agent",
		objs: []client.Object{podAs("ns", "a", "agent", corev1.PodSucceeded)},
	}, {
		name: "a ClusterRole through a binding to a ServiceAccount of another namespace", gk: clusterRole, obj: "agent",
		objs: []client.Object{
			crb("agent", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "agents", Name: "agent"}),
			podAs("agents", "a", "agent", corev1.PodRunning), podAs("ns", "b", "agent", corev1.PodRunning),
		},
		wantPods: []string{"agents/a"},
	}, {
		name: "a ClusterRole through a binding to every ServiceAccount of a namespace", gk: clusterRole, obj: "agent",
		objs: []client.Object{
			crb("agent", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:agents"}),
			podAs("agents", "a", "x", corev1.PodRunning), podAs("ns", "b", "y", corev1.PodRunning),
		},
		wantPods: []string{"agents/a"},
	}, {
		name: "a ClusterRoleBinding's subjects", gk: schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}, obj: "agent",
		objs: []client.Object{
			crb("agent", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "system:serviceaccount:agents:agent"}),
			podAs("agents", "a", "agent", corev1.PodRunning), podAs("agents", "b", "other", corev1.PodRunning),
		},
		wantPods: []string{"agents/a"},
	}, {
		name: "a ClusterRole aggregated into a bound one", gk: clusterRole, obj: "addon",
		objs: []client.Object{
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "addon", Labels: map[string]string{"aggregate-to-agent": "true"}}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"aggregate-to-agent": "true"}}}}},
			crb("agent", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "agents", Name: "agent"}),
			podAs("agents", "a", "agent", corev1.PodRunning),
		},
		wantPods: []string{"agents/a"},
	}, {
		name: "an unbound ClusterRole", gk: clusterRole, obj: "agent",
		objs: []client.Object{podAs("agents", "a", "agent", corev1.PodRunning)},
	}, {
		name: "a TeardownPolicy's Role sees only its namespace's pods", gk: role, ns: "ns", obj: "agent", scope: "ns",
		objs: []client.Object{
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns"},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "agent"},
				Subjects: []rbacv1.Subject{
					{Kind: rbacv1.ServiceAccountKind, Namespace: "elsewhere", Name: "agent"},
					{Kind: rbacv1.ServiceAccountKind, Namespace: "ns", Name: "local"},
				}},
			podAs("elsewhere", "a", "agent", corev1.PodRunning), podAs("ns", "b", "local", corev1.PodRunning),
		},
		wantPods: []string{"ns/b"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tc.objs...).Build()
			r := &Runner{Client: c, Reader: c}
			use, err := r.confirmUnused(t.Context(), tc.gk, tc.ns, tc.obj, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range use.Pods {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			if diff := cmp.Diff(tc.wantPods, got); diff != "" {
				t.Errorf("pods using %s %s (-want +got):\n%s", tc.gk.Kind, tc.obj, diff)
			}
		})
	}
}
