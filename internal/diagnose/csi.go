/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// csiDriverOf names the CSI driver behind a CSI finalizer: the attacher of
// a VolumeAttachment, the driver of a CSI PersistentVolume (or the
// provisioner that created it), the provisioner of a claim, or, for
// external-attacher/<driver with dots as dashes>, the registered CSIDriver
// of that name. "" when the finalizer is not a CSI sidecar's or the driver
// is unknown.
func (e *Explainer) csiDriverOf(ctx context.Context, gvk schema.GroupVersionKind, obj metav1.Object, fin string) string {
	attacher := strings.HasPrefix(fin, "external-attacher/")
	if !attacher && fin != "external-provisioner.volume.kubernetes.io/finalizer" && fin != "provisioner.storage.kubernetes.io/cloning-protection" {
		return ""
	}
	ann := obj.GetAnnotations()
	switch {
	case gvk.Group == "storage.k8s.io" && gvk.Kind == "VolumeAttachment":
		if u := e.objectWithSpec(ctx, gvrVolumeAttachment, obj); u != nil {
			if d, _, _ := unstructured.NestedString(u.Object, "spec", "attacher"); d != "" {
				return d
			}
		}
	case gvk.Group == "" && gvk.Kind == "PersistentVolume":
		if u := e.objectWithSpec(ctx, gvrPersistentVolume, obj); u != nil {
			if d, _, _ := unstructured.NestedString(u.Object, "spec", "csi", "driver"); d != "" {
				return d
			}
		}
		if d := ann["pv.kubernetes.io/provisioned-by"]; d != "" {
			return d
		}
	case gvk.Group == "" && gvk.Kind == "PersistentVolumeClaim":
		if d := ann["volume.kubernetes.io/storage-provisioner"]; d != "" {
			return d
		}
		return ann["volume.beta.kubernetes.io/storage-provisioner"]
	}
	if attacher {
		dashed := strings.TrimPrefix(fin, "external-attacher/")
		for _, d := range csiDrivers(ctx, e.c) {
			if strings.ReplaceAll(d, ".", "-") == dashed {
				return d
			}
		}
	}
	return ""
}

var (
	gvrVolumeAttachment = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"}
	gvrPersistentVolume = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
)

// objectWithSpec is obj in full: as explain read it, or read through the
// Cluster (one list per kind in status's Bulk mode, not one GET per
// object).
func (e *Explainer) objectWithSpec(ctx context.Context, gvr schema.GroupVersionResource, obj metav1.Object) *unstructured.Unstructured {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u
	}
	u, err := e.c.GetObject(ctx, gvr, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return nil
	}
	return u
}

// csiController finds the controller workload of a CSI driver: named by
// convention (ebs-csi-controller for ebs.csi.aws.com,
// csi-hostpath-controller, <driver-with-dashes>-controller), or running a
// CSI sidecar and named or labelled after the driver's first label, or the
// only workload in the cluster that runs the sidecar (by what runs, when
// its name says nothing of the driver's). With several such workloads it
// picks none: each could be another driver's.
func (e *Explainer) csiController(ctx context.Context, driver string, sidecars []string) (workload, bool) {
	first := firstLabel(driver)
	dashed := strings.ReplaceAll(driver, ".", "-")
	names := []string{first + "-csi-controller", "csi-" + first + "-controller", dashed + "-controller", first + "-controller",
		"csi-" + first + "plugin-controller", first + "-csi-controller-plugin", "csi-" + first + "plugin-provisioner", "csi-" + first + "plugin-attacher"}
	workloads := workloadList(ctx, e.c)
	for _, n := range names {
		for _, w := range workloads {
			if w.Ref.Name == n {
				return w, true
			}
		}
	}
	var running []workload
	for _, w := range workloads {
		if !containsAny(w.Containers, sidecars) {
			continue
		}
		if strings.Contains(w.Ref.Name, first) || strings.Contains(w.Labels["app.kubernetes.io/name"], first) ||
			strings.Contains(w.Labels["app"], first) || strings.Contains(w.Labels["app.kubernetes.io/instance"], first) {
			return w, true
		}
		running = append(running, w)
	}
	if len(running) == 1 {
		// Named after nothing of the driver's, but the only workload that
		// runs the sidecar: what runs is the remover (a driver's controller
		// named after its product, gce-pd for com.google.csi.gcepd).
		return running[0], true
	}
	return workload{}, false
}

// csiOwner narrows the owner of a CSI finalizer to the driver it belongs
// to: the workload is that driver's controller, not whichever workload runs
// a CSI sidecar. handled is true when the
// driver is known: the generic lookup must not then pick another driver's
// controller.
func (e *Explainer) csiOwner(ctx context.Context, o *Owner, gvk schema.GroupVersionKind, obj metav1.Object, fin string) (w workload, found, handled bool) {
	driver := e.csiDriverOf(ctx, gvk, obj, fin)
	if driver == "" {
		return workload{}, false, false
	}
	if containsString(csiDrivers(ctx, e.c), driver) {
		o.Evidence = append(o.Evidence, fmt.Sprintf("CSIDriver %s is registered", driver))
	} else {
		o.Evidence = append(o.Evidence, fmt.Sprintf("no CSIDriver object %s is registered (a driver must register one to be called)", driver))
	}
	sidecars := []string{"csi-provisioner", "external-provisioner"}
	if strings.HasPrefix(fin, "external-attacher/") {
		sidecars = []string{"csi-attacher", "external-attacher"}
	}
	w, found = e.csiController(ctx, driver, sidecars)
	if !found {
		o.Evidence = append(o.Evidence, fmt.Sprintf("no controller Deployment or StatefulSet of driver %s was found by name (%s-csi-controller, csi-%s-controller, ...) or by a CSI sidecar container in a workload named after it", driver, firstLabel(driver), firstLabel(driver)))
	}
	return w, found, true
}

// firstLabel is the first label of a driver's name that names it
// (ebs for ebs.csi.aws.com, teardown for csi.teardown.test), as its
// workloads are named after it.
func firstLabel(driver string) string {
	labels := strings.Split(driver, ".")
	for _, l := range labels {
		switch l {
		case "csi", "driver", "k8s", "storage", "kubernetes", "io", "com":
			continue
		}
		return l
	}
	return labels[0]
}

// csiDrivers is the name of every CSIDriver, read once per run.
func csiDrivers(ctx context.Context, c *kube.Cluster) []string {
	drivers, _ := c.CSIDrivers(ctx)
	var out []string
	for _, d := range drivers {
		out = append(out, d.Name)
	}
	return out
}
