/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// C1: a PVC held by kubernetes.io/pvc-protection because a scheduled pod
// (in any phase) uses it.
func TestExplainPVCInUse(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns, Finalizers: []string{"kubernetes.io/pvc-protection"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), "data", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-xyz", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: "node-c1", Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/x"}},
			Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(ns).Delete(context.Background(), "job-xyz", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(t.Context(), "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := explainJSON(t, "pvc/data", "-n", ns)
	f := plugintest.Find(rep, diagnose.CausePVCInUse, "job-xyz")
	if f == nil || f.Catalog != "C1" {
		t.Fatalf("no PVCInUse naming the pod: %+v", rep.Findings)
	}
	assertRemedy(t, f, "delete or finish the pod")
	if plugintest.Root(rep, diagnose.CausePVCInUse, "job-xyz") == nil {
		t.Errorf("root blockers = %+v", rep.RootBlockers)
	}
}

// C2: a PV held by kubernetes.io/pv-protection while Bound.
func TestExplainPVBound(t *testing.T) {
	needCluster(t)
	name := "pv-" + newNamespace(t)
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"kubernetes.io/pv-protection"}},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/none"}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "shop", Name: "data"}}}
	got, err := cs.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().PersistentVolumes().Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	got.Status.Phase = corev1.VolumeBound
	if _, err := cs.CoreV1().PersistentVolumes().UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumes().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := explainJSON(t, "pv/"+name)
	f := plugintest.Find(rep, diagnose.CausePVBound, name)
	if f == nil || f.Catalog != "C2" || !contains(f.Message, "shop/data") {
		t.Fatalf("no PVBound: %+v", rep.Findings)
	}
	assertRemedy(t, f, "delete the bound PersistentVolumeClaim")
}

// D1: a pod still inside its grace period is waiting, not stuck.
func TestExplainPodInGracePeriod(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ready-" + ns}}
	got, err := cs.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node.Name, TerminationGracePeriodSeconds: ptr.To[int64](600), Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/x"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(ns).Delete(context.Background(), "slow", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "slow", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "", nil, "explain", "pod/slow", "-n", ns)
	if r.code != ExitOK {
		t.Errorf("a pod in its grace period is not blocked: exit %d\n%s", r.code, r.out)
	}
	rep := explainJSON(t, "pod/slow", "-n", ns)
	if f := plugintest.Find(rep, diagnose.CausePodInGracePeriod, "slow"); f == nil || f.Severity != diagnose.SeverityWaiting || rep.Blocked {
		t.Errorf("no waiting PodInGracePeriod: %+v", rep.Findings)
	}
}

// B1 by Lease: no workload named after the owner, but its leader-election
// Lease has not been renewed for ten minutes.
func TestExplainOwnerLeaseStale(t *testing.T) {
	needCluster(t)
	ops := newNamespace(t)
	renewed := metav1.NewMicroTime(time.Now().Add(-10 * time.Minute))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a1b2c3.queue.teardown.test", Namespace: ops},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("queue-operator-7d9f_5e1c"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &renewed}}
	if _, err := cs.CoordinationV1().Leases(ops).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	configMap(t, ns, "queue", "queue-operator", []string{"queue.teardown.test/drain"})
	deleteConfigMap(t, ns, "queue", "")
	rep := explainJSON(t, "configmap/queue", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseOwnerGone, "queue")
	if f == nil || f.Owner.State != diagnose.OwnerDown || f.Owner.Workload == nil || f.Owner.Workload.Kind != "Lease" {
		t.Fatalf("owner not judged down from its stale Lease: %+v", rep.Findings)
	}
}
