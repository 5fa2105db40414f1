/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// kubeletHold stands in for a kubelet's graceful termination: no kubelet
// runs here, so the test keeps pods Terminating with this finalizer and
// lets them go when it chooses.
const kubeletHold = "test.teardown.dev/kubelet"

// agentInstall is what an operator chart installs: a DaemonSet whose pods
// run as a ServiceAccount bound to a ClusterRole.
type agentInstall struct {
	ds   *appsv1.DaemonSet
	pods []*corev1.Pod
	rbac []client.Object // ServiceAccount, ClusterRole, ClusterRoleBinding
}

func installAgent(t *testing.T, ns, app string) *agentInstall {
	t.Helper()
	labels := map[string]string{"app": app}
	a := &agentInstall{ds: &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{ServiceAccountName: app, Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
			},
		},
	}}
	create(t, a.ds)
	// The DaemonSet controller does not run here: create its pods as it would.
	for i := range 2 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", app, i), Namespace: ns, Labels: labels, Finalizers: []string{kubeletHold},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: a.ds.Name, UID: a.ds.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			},
			Spec: a.ds.Spec.Template.Spec,
		}
		create(t, pod)
		a.pods = append(a.pods, pod)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns, Labels: labels}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: labels},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: app},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: app, Namespace: ns}}}
	for _, o := range []client.Object{sa, role, binding} {
		create(t, o)
		a.rbac = append(a.rbac, o)
	}
	return a
}

// uninstall deletes everything at once, as `helm uninstall` does.
func (a *agentInstall) uninstall(t *testing.T) {
	t.Helper()
	del(t, a.ds, client.PropagationPolicy(metav1.DeletePropagationBackground))
	for _, o := range a.rbac {
		del(t, o)
	}
}

// podsTerminating waits until the garbage collector has deleted every pod.
func (a *agentInstall) podsTerminating(t *testing.T) {
	t.Helper()
	for _, p := range a.pods {
		testenv.Eventually(t, 30*time.Second, "the garbage collector to delete "+p.Name, func(ctx context.Context) (bool, error) {
			got := &corev1.Pod{}
			err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got)
			return err == nil && got.DeletionTimestamp != nil, client.IgnoreNotFound(err)
		})
	}
}

// stopPods lets the pods finish terminating.
func (a *agentInstall) stopPods(t *testing.T) {
	t.Helper()
	for _, p := range a.pods {
		patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`))
		if err := k8s.Patch(t.Context(), p, patch); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}

func (a *agentInstall) rbacPresent(ctx context.Context) (present []string, err error) {
	for _, o := range a.rbac {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
		if err == nil {
			present = append(present, fmt.Sprintf("%T", o))
		} else if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
	}
	return present, nil
}

// TestOrderedUninstall: an agent's RBAC must outlive its pods, which need it
// to shut down cleanly. Without a policy the RBAC vanishes at once while the
// pods are still terminating; with a ClusterTeardownPolicy that waits for
// the pods, it stays until they are gone.
func TestOrderedUninstall(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)

	t.Run("without a policy the RBAC goes first", func(t *testing.T) {
		a := installAgent(t, ns, "bare-agent")
		a.uninstall(t)
		a.podsTerminating(t)
		testenv.Eventually(t, 10*time.Second, "the RBAC objects to vanish", func(ctx context.Context) (bool, error) {
			present, err := a.rbacPresent(ctx)
			return len(present) == 0, err
		})
		// ...while the pods that need it are still shutting down.
		for _, p := range a.pods {
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(p), &corev1.Pod{}); err != nil {
				t.Fatalf("pod %s gone before the RBAC: %v", p.Name, err)
			}
		}
		a.stopPods(t)
	})

	t.Run("with a policy the RBAC waits for the pods", func(t *testing.T) {
		const app = "guarded-agent"
		pol := &teardownv1alpha1.ClusterTeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "agent-rbac-last"},
			Spec: teardownv1alpha1.TeardownPolicySpec{
				Targets: []teardownv1alpha1.Target{
					{APIVersion: "v1", Kind: "ServiceAccount", Selector: selector("app", app)},
					{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Selector: selector("app", app)},
					{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Selector: selector("app", app)},
				},
				Steps: []teardownv1alpha1.Step{{Name: "pods-gone", Wait: &teardownv1alpha1.WaitAction{
					Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod", Selector: selector("app", app)}},
					Condition: "size(objects) == 0",
				}}},
			},
		}
		create(t, pol)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
		mustBeReady(t, pol)
		a := installAgent(t, ns, app)
		for _, o := range a.rbac {
			testenv.Eventually(t, 20*time.Second, fmt.Sprintf("the finalizer on %T", o), hasFinalizer(o, "teardown.dev/agent-rbac-last"))
		}
		a.uninstall(t)
		a.podsTerminating(t)
		time.Sleep(2 * time.Second)
		present, err := a.rbacPresent(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(present) != 3 {
			t.Fatalf("RBAC objects present while the pods terminate: %v, want all 3", present)
		}
		a.stopPods(t)
		for _, p := range a.pods {
			testenv.Eventually(t, 20*time.Second, p.Name+" gone", testenv.Gone(k8s, p))
		}
		testenv.Eventually(t, 20*time.Second, "the RBAC objects to go after the pods", func(ctx context.Context) (bool, error) {
			present, err := a.rbacPresent(ctx)
			return len(present) == 0, err
		})
	})
}
