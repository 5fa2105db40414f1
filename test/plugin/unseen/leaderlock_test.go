/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// Family 1 of issue 20 (see waiting_test.go), the owner's leader lock: a
// workload with ready replicas reconciles only through its leader.

// operator-lib's leader-for-life lock: the operator pod went Succeeded, a
// new pod started, and "did not become the leader instead it was waiting as
// previous Succeeded pod is still the leader"
// (https://github.com/operator-framework/operator-lib/issues/158; the same
// lock held by a stopped operator: https://github.com/open-horizon/anax/issues/1788).
// The Deployment has a ready replica, so the owner looks alive; the lock
// ConfigMap, owned by the stopped pod, says no replica leads.
func TestWaitingLeaderLockHeldByStoppedPod(t *testing.T) {
	needCluster(t)
	const group, fin = "cache.example.com", "cache.example.com/finalizer"
	ensureCRD(t, group, "Memcached", "memcacheds", "v1alpha1")
	ops := plugintest.NewNamespace(t, cs, "memcached-operator")
	operator(t, ops, "memcached-operator", "memcached-operator", []string{"memcached-operator"}, "quay.io/example/memcached-operator:v0.0.1", 1)
	grant(t, ops, "memcached-operator", "", group, "memcacheds")
	old := operatorPod(t, ops, "memcached-operator-6d4f8b7c9-x7k2p", "memcached-operator", corev1.PodSucceeded)
	operatorPod(t, ops, "memcached-operator-6d4f8b7c9-q9z4m", "memcached-operator", corev1.PodRunning)
	lock := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "memcached-operator-lock", Namespace: ops,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: old.Name, UID: old.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps(ops).Create(t.Context(), lock, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := plugintest.NewNamespace(t, cs, "cache")
	terminatingObject(t, group, "v1alpha1", "Memcached", "memcacheds", ns, "memcached-sample", "memcached-operator", []string{fin},
		map[string]any{"size": int64(3)}, nil)

	rep := explain(t, "memcacheds."+group+"/memcached-sample", "-n", ns)
	if !rep.Blocked || len(rep.RootBlockers) == 0 {
		t.Fatalf("not blocked; findings:\n%s", dump(rep.Findings))
	}
	first := rep.RootBlockers[0]
	if first.Cause != "OwnerNotLeading" || first.Object == nil || first.Object.Kind != "ConfigMap" || first.Object.Name != "memcached-operator-lock" {
		t.Fatalf("first root blocker %s on %s, want OwnerNotLeading on the lock ConfigMap; roots:\n%s", first.Cause, dump(first.Object), dump(rep.RootBlockers))
	}
	mustContain(t, "root message", first.Message, old.Name, "Succeeded", "does not lead")
	mustContain(t, "root remedy", first.Remedy, "delete pod "+ops+"/"+old.Name)
	mustNotContain(t, "root remedy", first.Remedy, "kubectl teardown release")
}

// A controller that runs but does not lead: its leader-election Lease is
// held by a pod that is gone, and no ready replica took it over
// ("Controller failed to renew lease (leader election) due to timeout
// until pod restart": https://github.com/kubernetes/ingress-nginx/issues/11287;
// "the lease seems not being updated after pod restart":
// https://github.com/knative/serving/pull/15321). KEDA's operator has a
// ready replica, so its ScaledObject's finalizer looked waited on; the
// Lease says nobody reconciles.
func TestWaitingLeaseHolderGone(t *testing.T) {
	needCluster(t)
	const group, fin = "keda.sh", "finalizer.keda.sh"
	ensureCRD(t, group, "ScaledObject", "scaledobjects", "v1alpha1")
	keda := plugintest.NewNamespace(t, cs, "keda")
	operator(t, keda, "keda-operator", "keda-operator", []string{"/keda"}, "ghcr.io/kedacore/keda:2.14.0", 1)
	grant(t, keda, "keda-operator", "", group, "scaledobjects")
	operatorPod(t, keda, "keda-operator-7d9c8f6b5-r2x8k", "keda-operator", corev1.PodRunning)
	holder := "keda-operator-7d9c8f6b5-m4qzt_5f0c2a9e-1b7d-4c1e-9a53-0d6f3e2b8c71"
	renewed := metav1.NewMicroTime(time.Now().Add(-10 * time.Minute))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "operator.keda.sh", Namespace: keda},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptr.To[int32](15), AcquireTime: &renewed, RenewTime: &renewed}}
	if _, err := cs.CoordinationV1().Leases(keda).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := plugintest.NewNamespace(t, cs, "web")
	terminatingObject(t, group, "v1alpha1", "ScaledObject", "scaledobjects", ns, "web-scaler", "keda", []string{fin},
		map[string]any{"scaleTargetRef": map[string]any{"name": "web"}}, nil)

	rep := explain(t, "scaledobjects."+group+"/web-scaler", "-n", ns)
	if !rep.Blocked || len(rep.RootBlockers) == 0 {
		t.Fatalf("not blocked; findings:\n%s", dump(rep.Findings))
	}
	first := rep.RootBlockers[0]
	if first.Cause != "OwnerNotLeading" || first.Object == nil || first.Object.Kind != "Lease" || first.Object.Name != "operator.keda.sh" {
		t.Fatalf("first root blocker %s on %s, want OwnerNotLeading on the Lease; roots:\n%s", first.Cause, dump(first.Object), dump(rep.RootBlockers))
	}
	mustContain(t, "root message", first.Message, holder, "keda-operator-7d9c8f6b5-m4qzt does not exist", "does not lead")
	mustNotContain(t, "root remedy", first.Remedy, "kubectl teardown release")
}

// The negative control beside the scenarios above: an owner that leads
// (its lock is held by a running pod) and references an object that is not
// being deleted is waited on, as before: nothing is blamed on the lock or
// on the reference.
func TestWaitingNothingElse(t *testing.T) {
	needCluster(t)
	const group, fin = "cache.example.com", "cache.example.com/finalizer"
	ensureCRD(t, group, "Memcached", "memcacheds", "v1alpha1")
	ops := plugintest.NewNamespace(t, cs, "memcached-operator")
	operator(t, ops, "memcached-operator", "memcached-operator", []string{"memcached-operator"}, "quay.io/example/memcached-operator:v0.0.1", 1)
	grant(t, ops, "memcached-operator", "", group, "memcacheds")
	leader := operatorPod(t, ops, "memcached-operator-6d4f8b7c9-q9z4m", "memcached-operator", corev1.PodRunning)
	lock := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "memcached-operator-lock", Namespace: ops,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: leader.Name, UID: leader.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps(ops).Create(t.Context(), lock, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := plugintest.NewNamespace(t, cs, "cache")
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "memcached-config", Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	terminatingObject(t, group, "v1alpha1", "Memcached", "memcacheds", ns, "memcached-sample", "memcached-operator", []string{fin},
		map[string]any{"size": int64(3), "configRef": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "memcached-config"}}, nil)

	rep := explain(t, "memcacheds."+group+"/memcached-sample", "-n", ns)
	f := find(rep, fin)
	if rep.Blocked || f == nil || f.Cause != "CleanupInProgress" || f.Severity != "waiting" || len(f.Children) != 0 {
		t.Fatalf("blocked %v, finding %s: want CleanupInProgress, waiting, nothing below it", rep.Blocked, dump(f))
	}
}

// operatorPod creates a pod of the operator's Deployment with phase (no
// kubelet runs here: the status stays as written).
func operatorPod(t *testing.T, ns, name, sa string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"control-plane": "memcached-operator"}},
		Spec: corev1.PodSpec{ServiceAccountName: sa, NodeName: "worker-1", Containers: []corev1.Container{{Name: "manager", Image: "quay.io/example/memcached-operator:v0.0.1"}}}}
	got, err := cs.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = phase
	got, err = cs.CoreV1().Pods(ns).UpdateStatus(t.Context(), got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
