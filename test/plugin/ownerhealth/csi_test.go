/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// csiDriver registers a CSIDriver object, as a driver's chart installs it.
func csiDriver(t *testing.T, name string) {
	t.Helper()
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}}
	if _, err := cs.StorageV1().CSIDrivers().Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.StorageV1().CSIDrivers().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// A CSI driver installed but unhealthy: its controller Deployment's pods
// never become ready (the deployment and replicaset controllers create
// them; nothing schedules them), so nothing detaches or deletes its
// volumes. explain names the driver's controller and its state, not a
// missing owner, even with another driver's controller running.
func TestExplainCSIControllerUnhealthy(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	sys := plugintest.NewNamespace(t, cs, "csi")
	node := "node-" + sys
	readyNode(t, node)
	// Another driver's healthy controller, with the same sidecars.
	sidecars := func(plugin string) []corev1.Container {
		return []corev1.Container{{Name: plugin, Image: "registry.invalid/" + plugin + ":1"},
			{Name: "csi-provisioner", Image: "registry.k8s.io/sig-storage/csi-provisioner:v5.2.0"},
			{Name: "csi-attacher", Image: "registry.k8s.io/sig-storage/csi-attacher:v4.8.0"}}
	}
	csiDriver(t, "hostpath.csi.k8s.io")
	runningDeployment(t, sys, "csi-hostpathplugin", "csi-hostpathplugin-sa", node, sidecars("hostpath")...)
	csiDriver(t, "ebs.csi.aws.com")
	plugintest.GrantClusterWide(t, cs, sys, "ebs-csi-controller-sa", "storage.k8s.io", "volumeattachments")
	plugintest.GrantClusterWide(t, cs, sys, "ebs-csi-controller-sa", "", "persistentvolumes")
	if _, err := cs.AppsV1().Deployments(sys).Create(ctx, deploymentOf(sys, "ebs-csi-controller", "ebs-csi-controller-sa", 2, sidecars("ebs-plugin")...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AppsV1().Deployments(sys).Delete(context.Background(), "ebs-csi-controller", metav1.DeleteOptions{})
	})
	testenv.Eventually(t, 30*time.Second, "the deployment controller to create the 2 pods", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(sys).Get(ctx, "ebs-csi-controller", metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == 2 && d.Status.AvailableReplicas == 0, err
	})

	// A VolumeAttachment and a PersistentVolume of the driver, deleted.
	va := "csi-" + sys
	attachment := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: va, Finalizers: []string{"external-attacher/ebs-csi-aws-com"}},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + sys)}}}
	if _, err := cs.StorageV1().VolumeAttachments().Create(ctx, attachment, metav1.CreateOptions{FieldManager: "csi-attacher"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.StorageV1().VolumeAttachments().Patch(context.Background(), va, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + sys, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0abc"}}}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{FieldManager: "csi-provisioner"}); err != nil {
		t.Fatal(err)
	}
	// Only the provisioner's finalizer (the admission plugin adds
	// pv-protection, whose controller does not run here).
	if _, err := cs.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["external-provisioner.volume.kubernetes.io/finalizer"]}}`), metav1.PatchOptions{FieldManager: "csi-provisioner"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().PersistentVolumes().Patch(context.Background(), pv.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := cs.StorageV1().VolumeAttachments().Delete(ctx, va, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, target := range [][]string{{"volumeattachment/" + va}, {"pv/" + pv.Name}} {
		rep := explain(t, target...)
		blocked(t, rep, target...)
		name := strings.SplitN(target[0], "/", 2)[1]
		f := root(t, rep, diagnose.CauseOwnerGone, name)
		if f.Owner == nil || f.Owner.State != diagnose.OwnerDown || f.Owner.Workload == nil || f.Owner.Workload.Name != "ebs-csi-controller" {
			t.Fatalf("%s: owner %+v, want the ebs driver's controller, down", target, f.Owner)
		}
		mustContain(t, "message", f.Message, "is installed but unhealthy: Deployment "+sys+"/ebs-csi-controller at 0 of 2 ready (2 pod(s) Pending, not scheduled to a node)")
		for _, wrong := range []string{"missing", "not found", "does not look alive"} {
			if strings.Contains(f.Message, wrong) {
				t.Errorf("%s: message says %q: %s", target, wrong, f.Message)
			}
		}
		mustContain(t, "evidence", strings.Join(f.Owner.Evidence, "\n"), "CSIDriver ebs.csi.aws.com is registered")
		mustContain(t, "remedy", f.Remedy, "so that Deployment "+sys+"/ebs-csi-controller becomes ready", "do not release")
	}
	recordText(t, "explain-csi-unhealthy.txt", "explain", "volumeattachment/"+va)
}
