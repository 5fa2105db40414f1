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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// kubeletCrashLooping writes the status a kubelet writes for a pod whose
// container keeps exiting: Running, not Ready, the container waiting in
// CrashLoopBackOff after its last exit.
func kubeletCrashLooping(t *testing.T, ns, name string, restarts int32) {
	t.Helper()
	pod, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	c := pod.Spec.Containers[0]
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [" + c.Name + "]", LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [" + c.Name + "]", LastTransitionTime: now},
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, ImageID: c.Image, RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: "back-off 5m0s restarting failed container=" + c.Name + " pod=" + pod.Name + "_" + ns + "(" + string(pod.UID) + ")"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: now, FinishedAt: now}}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing pod status: %v", err)
	}
}

// An owner installed but crash-looping: cert-manager's Deployment exists,
// its pod runs on a node and keeps exiting, so the deployment controller
// counts 0 of 1 available. explain says so, with why from the pod's
// status, and never that cert-manager is missing.
func TestExplainOwnerCrashLooping(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ops := plugintest.NewNamespace(t, cs, "cert-manager")
	node := "node-" + ops
	readyNode(t, node)
	dep := deploymentOf(ops, "cert-manager", "cert-manager", 1, corev1.Container{Name: "cert-manager-controller", Image: "quay.io/jetstack/cert-manager-controller:v1.18.2"})
	if _, err := cs.AppsV1().Deployments(ops).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AppsV1().Deployments(ops).Delete(context.Background(), dep.Name, metav1.DeleteOptions{})
	})
	plugintest.GrantClusterWide(t, cs, ops, "cert-manager", "", "configmaps")
	var pod string
	testenv.Eventually(t, 30*time.Second, "cert-manager's pod", func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(ops).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=cert-manager"})
		if err != nil || len(l.Items) == 0 {
			return false, err
		}
		pod = l.Items[0].Name
		return true, nil
	})
	bind(t, ops, pod, node)
	kubeletCrashLooping(t, ops, pod, 7)

	ns := plugintest.NewNamespace(t, cs, "shop")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "acme-order", Namespace: ns, Finalizers: []string{"acme.cert-manager.io/finalizer"}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "cert-manager-orders"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), cm.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	target := []string{"configmap/acme-order", "-n", ns}
	rep := explain(t, target...)
	blocked(t, rep, target...)
	f := root(t, rep, diagnose.CauseOwnerGone, "acme-order")
	mustContain(t, "message", f.Message, "cert-manager owns \"acme.cert-manager.io/finalizer\" and is installed but unhealthy: Deployment "+ops+"/cert-manager at 0 of 1 ready (1 pod(s) container cert-manager-controller CrashLoopBackOff (restarted 7 times, last exit 1: Error))")
	for _, wrong := range []string{"missing", "not found", "does not look alive"} {
		if strings.Contains(f.Message, wrong) {
			t.Errorf("message says %q: %s", wrong, f.Message)
		}
	}
	mustContain(t, "remedy", f.Remedy, "so that Deployment "+ops+"/cert-manager becomes ready", "do not release")
}
