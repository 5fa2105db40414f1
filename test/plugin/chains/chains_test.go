/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chains

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// Family 4: PV → PVC → pod. The volume is held by pv-protection because it
// is Bound to a claim; the claim is Terminating, held by pvc-protection
// because a pod uses it; the pod is Terminating on a node whose kubelet is
// gone. Every link is made by the real controllers (PV binder, pv- and
// pvc-protection); explain on the volume must name the pod as the root
// cause, not the claim: first the running pod, then, once it is deleted,
// its node that never confirms it stopped. Force-deleting the pod, the remedy
// explain gives, then lets the real controllers release the claim and the
// volume.
func TestExplainVolumeChainToPod(t *testing.T) {
	needCluster(t)
	ns := plugintest.NewNamespace(t, cs, "db")
	node, pvName := "node-"+ns, "pv-"+ns
	plugintest.NotReadyNode(t, cs, node)
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "",
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + pvName}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "data"}}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().PersistentVolumes().Patch(context.Background(), pvName, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""), VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The PV binder binds them.
	poll(t, 60*time.Second, "the claim to be Bound", func(ctx context.Context) (bool, error) {
		c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		return err == nil && c.Status.Phase == corev1.ClaimBound, nil
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "db", Image: "registry.invalid/db"}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(ns).Delete(context.Background(), "db-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	for _, del := range []func(context.Context) error{
		func(ctx context.Context) error {
			return cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{})
		},
		func(ctx context.Context) error {
			return cs.CoreV1().PersistentVolumes().Delete(ctx, pvName, metav1.DeleteOptions{})
		},
	} {
		if err := del(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// The pod runs: it is the root, not being deleted.
	rep := explainUntil(t, 60*time.Second, diagnose.CausePVCInUse, "db-0", "pv/"+pvName)
	if r := plugintest.Root(rep, diagnose.CausePVCInUse, "db-0"); len(rep.RootBlockers) != 1 || !strings.Contains(r.Message, "uses the claim and is not being deleted") ||
		!strings.Contains(r.Remedy, "kubectl delete pod db-0 -n "+ns) {
		t.Errorf("root blockers = %+v", rep.RootBlockers)
	}
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "db-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep = explainUntil(t, 60*time.Second, diagnose.CausePodOnNotReadyNode, "db-0", "pv/"+pvName)
	if len(rep.RootBlockers) != 1 {
		t.Errorf("root blockers = %+v, want only the pod", rep.RootBlockers)
	}
	pvf := plugintest.Find(rep, diagnose.CausePVBound, pvName)
	claim := plugintest.Find(rep, diagnose.CauseBoundClaimTerminating, "data")
	user := plugintest.Find(rep, diagnose.CausePVCInUse, "db-0")
	if pvf == nil || claim == nil || user == nil {
		t.Fatalf("the chain PV → claim → pod is not in the report:\n%s", plugintest.Dump(rep))
	}
	if !strings.Contains(claim.Message, "kubernetes.io/pvc-protection") || !strings.Contains(user.Message, "is being deleted") {
		t.Errorf("claim %q, pod %q", claim.Message, user.Message)
	}
	r := plugintest.Root(rep, diagnose.CausePodOnNotReadyNode, "db-0")
	if !strings.Contains(r.Message, "node "+node+" is Ready=Unknown") || !strings.Contains(r.Remedy, "kubectl taint node "+node) {
		t.Errorf("root = %+v", r)
	}
	// The claim and the namespace tell the same root.
	explainUntil(t, 10*time.Second, diagnose.CausePodOnNotReadyNode, "db-0", "pvc/data", "-n", ns)
	text(t, "explain-pv-chain.txt", "explain", "pv/"+pvName)

	// The remedy's last resort: the pod goes, then the real controllers
	// release the claim and the volume.
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "db-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	poll(t, 90*time.Second, "the volume to go once the pod is gone", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func poll(t *testing.T, timeout time.Duration, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
