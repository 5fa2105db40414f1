/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestTenantMessagesNameOnlyItsNamespace (issue 16): under a
// ClusterTeardownPolicy with an unused step on RoleBindings (the shipped
// hold-while-used sample), a tenant's RoleBinding in namespace A naming
// the Group system:serviceaccounts:B is held while B's pods run. What the
// controller writes where the tenant reads it, the progress annotation on
// the binding and the Events of namespace A (the pending step's and the
// diagnosis's), says it is held and by how many pods, and names none of
// B's pods or workloads, which the tenant may not list. The negative
// control: a RoleBinding of A whose subject runs in A names its pod and
// Deployment. The cluster admin's view, the policy's status diagnosis,
// still names B's pod. The controller runs as its own process.
func TestTenantMessagesNameOnlyItsNamespace(t *testing.T) {
	testenv.SkipShort(t)
	nsA, nsB := newNamespace(t), newNamespace(t)
	startController(t, "messages", "--diagnose-after=1s", "--diagnose-interval=2s")

	// The tenant of A: admin there, nothing in B.
	tenantCfg, err := env.AddUser("tenant-" + nsA)
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := client.New(tenantCfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-admin", Namespace: nsA},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant-" + nsA}}})

	app := "held-" + nsA
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hold-while-used-" + nsA},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding",
				Selector: &metav1.LabelSelector{MatchLabels: labels("app", app)}}},
			Steps: []teardownv1alpha1.Step{{Name: "pods-gone", Unused: &teardownv1alpha1.UnusedAction{}}},
		},
	}
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	key := "teardown.dev/" + pol.Name
	if !poll(30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		got := &teardownv1alpha1.ClusterTeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, teardownv1alpha1.ReadyCondition), nil
	}) {
		t.Fatal("the ClusterTeardownPolicy is not Ready")
	}

	// B runs billing's pods; A runs worker's.
	billingPods := workloadPods(t, nsB, "billing", 2)
	workerPods := workloadPods(t, nsA, "worker", 1)
	readB := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-b", Namespace: nsA, Labels: labels("app", app)},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + nsB}}}
	readA := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-a", Namespace: nsA, Labels: labels("app", app)},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "worker", Namespace: nsA}}}
	for _, b := range []*rbacv1.RoleBinding{readB, readA} {
		create(t, b)
		t.Cleanup(func() { unblockBinding(b) })
		if !poll(30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) { return carries(ctx, b, key) }) {
			t.Fatalf("RoleBinding %s got no finalizer", b.Name)
		}
	}
	for _, b := range []*rbacv1.RoleBinding{readB, readA} {
		if err := k8s.Delete(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}

	// What the tenant reads, read as the tenant.
	msgB := pendingMessage(t, tenant, readB, key, "still run")
	t.Logf("progress on %s/read-b: %s", nsA, msgB)
	if want := "2 pods outside namespace " + nsA + " still run as a subject of this RoleBinding"; !strings.Contains(msgB, want) {
		t.Errorf("read-b's progress message %q does not say %q", msgB, want)
	}
	msgA := pendingMessage(t, tenant, readA, key, "still run")
	t.Logf("progress on %s/read-a: %s", nsA, msgA)
	if want := "pod " + nsA + "/worker-0 of Deployment " + nsA + "/worker still runs as a subject of this RoleBinding"; !strings.Contains(msgA, want) {
		t.Errorf("negative control: read-a's progress message %q does not name its own namespace's pod: want %q", msgA, want)
	}

	// The diagnosis has looked (its Event on read-b is there), and the
	// pending step's Event too; none of them names B or its objects.
	var notes []string
	if !poll(60*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		notes = nil
		// core/v1, which the tenant's admin role reads: the same Events.
		list := &corev1.EventList{}
		if err := tenant.List(ctx, list, client.InNamespace(nsA)); err != nil {
			return false, err
		}
		reasons := map[string]bool{}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == readB.Name && e.InvolvedObject.Kind == "RoleBinding" {
				notes = append(notes, e.Reason+": "+e.Message)
				reasons[e.Reason] = true
			}
		}
		return reasons[finalizer.ReasonCleanupPending] && reasons[teardownv1alpha1.TerminationBlockedReason], nil
	}) {
		t.Fatalf("no CleanupPending and TerminationBlocked Events on read-b in %s; got %q", nsA, notes)
	}
	for _, n := range notes {
		t.Logf("Event on %s/read-b: %s", nsA, n)
	}
	secrets := []string{nsB, "billing"}
	for _, p := range billingPods {
		secrets = append(secrets, p.Name)
	}
	for _, text := range append([]string{msgB}, notes...) {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("a message the tenant of %s reads names %q of namespace %s, which it may not list: %q", nsA, s, nsB, text)
			}
		}
	}
	// That the tenant could not have listed them is the premise.
	if err := tenant.List(t.Context(), &corev1.PodList{}, client.InNamespace(nsB)); !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant may list pods in %s (err %v): the test's premise is wrong", nsB, err)
	}

	// The cluster admin reads the ClusterTeardownPolicy's status: its
	// diagnosis names the pod.
	if !poll(60*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		got := &teardownv1alpha1.ClusterTeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		for _, b := range got.Status.BlockedObjects {
			if b.Object.Name == readB.Name && b.Diagnosis != nil && strings.Contains(b.Diagnosis.Message, nsB+"/billing-") {
				t.Logf("the admin's diagnosis of read-b: %s: %s", b.Diagnosis.Cause, b.Diagnosis.Message)
				return true, nil
			}
		}
		return false, nil
	}) {
		t.Error("the ClusterTeardownPolicy's status has no diagnosis of read-b naming the pod of " + nsB)
	}

	// Held while the pods run, released after they go.
	if fins, exists, err := finalizersOf(t.Context(), readB); err != nil || !exists || len(fins) == 0 {
		t.Fatalf("read-b went while B's pods run (exists %v, finalizers %v, err %v)", exists, fins, err)
	}
	for _, p := range billingPods {
		if err := k8s.Delete(t.Context(), p); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	if !poll(30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, exists, err := finalizersOf(ctx, readB)
		return !exists, err
	}) {
		t.Error("read-b did not go after the last pod of " + nsB + " went")
	}
	for _, p := range workerPods {
		_ = k8s.Delete(t.Context(), p)
	}
}

// workloadPods creates a Deployment named name in ns, with a ServiceAccount
// of the same name, and n pods of it as its ReplicaSet would (no
// controller here creates them); the Deployment exists, so the garbage
// collector leaves them.
func workloadPods(t *testing.T, ns, name string, n int) []*corev1.Pod {
	t.Helper()
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	lbls := labels("app", name)
	spec := corev1.PodSpec{ServiceAccountName: name, Containers: []corev1.Container{{Name: "c", Image: name + ":1"}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: lbls},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbls}, Spec: spec}}}
	create(t, d)
	var pods []*corev1.Pod
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: ns, Labels: lbls,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: ptr.To(true)}}},
			Spec: spec}
		create(t, p)
		pods = append(pods, p)
	}
	return pods
}

// pendingMessage waits, reading as c, until obj's progress record under
// key is pending with a message that contains want, and returns it.
func pendingMessage(t *testing.T, c client.Client, obj client.Object, key, want string) string {
	t.Helper()
	var last string
	if !poll(30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		got := &metav1.PartialObjectMetadata{}
		got.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("RoleBinding"))
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			return false, err
		}
		for _, p := range finalizer.ReadProgress(got) {
			if p.Finalizer == key {
				last = string(p.State) + ": " + p.Message
				return p.State == finalizer.StatePending && strings.Contains(p.Message, want), nil
			}
		}
		return false, nil
	}) {
		t.Fatalf("%s %s: no pending progress record containing %q; last %q", obj.GetNamespace(), obj.GetName(), want, last)
	}
	return last[len(finalizer.StatePending)+2:]
}

// unblockBinding removes a RoleBinding's finalizers, as an administrator
// would, so that the test leaves nothing stuck.
func unblockBinding(b *rbacv1.RoleBinding) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = k8s.Patch(ctx, b, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
}
