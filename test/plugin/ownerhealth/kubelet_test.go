/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"context"
	"testing"
	"time"

	"github.com/teardown-dev/teardown/internal/testenv"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// No scheduler and no kubelet run here: these helpers write what they
// would, through the same API calls (pods/binding, pods/status,
// nodes/status).

// readyNode creates a Node whose kubelet reports Ready.
func readyNode(t *testing.T, name string, finalizers ...string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
	got, err := cs.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{FieldManager: "karpenter"})
	if err != nil {
		t.Fatalf("creating node: %v", err)
	}
	now := metav1.Now()
	got.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting node status: %v", err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// bind places a pod on node, as the scheduler does.
func bind(t *testing.T, ns, pod, node string) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := cs.CoreV1().Pods(ns).Bind(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding pod %s/%s: %v", ns, pod, err)
	}
}

// kubeletRunning writes the status a kubelet writes once every container
// of the pod runs and is ready.
func kubeletRunning(t *testing.T, ns, name string) {
	t.Helper()
	pod, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing pod status: %v", err)
	}
}

// runningPod creates a pod on node whose containers run and are ready.
func runningPod(t *testing.T, ns, name, node string, labels map[string]string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/db:1"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	kubeletRunning(t, ns, name)
	got, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// deploymentOf is a Deployment of replicas pods labelled and named name.
func deploymentOf(ns, name, serviceAccount string, replicas int32, containers ...corev1.Container) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name}
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "manager", Image: "registry.invalid/" + name + ":1"}}
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: serviceAccount, TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: containers}}}}
}

// runningDeployment creates a Deployment whose pods (created by the
// deployment and replicaset controllers) are scheduled on node and run:
// the deployment controller then counts them available.
func runningDeployment(t *testing.T, ns, name, serviceAccount, node string, containers ...corev1.Container) {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deploymentOf(ns, name, serviceAccount, 1, containers...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Gone at once when the test ends (the garbage collector removes its
	// pods), so that no later test finds it.
	t.Cleanup(func() { _ = cs.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	var pod string
	testenv.Eventually(t, 30*time.Second, "the pod of Deployment "+name, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil || len(l.Items) == 0 {
			return false, err
		}
		pod = l.Items[0].Name
		return true, nil
	})
	bind(t, ns, pod, node)
	kubeletRunning(t, ns, pod)
	testenv.Eventually(t, 30*time.Second, "Deployment "+name+" available", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 1, err
	})
}

// kubeletWarning records a Warning Event about a pod from the kubelet on
// node, as its event recorder writes it.
func kubeletWarning(t *testing.T, pod *corev1.Pod, node, reason, message string, count int32) {
	t.Helper()
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, APIVersion: "v1", ResourceVersion: pod.ResourceVersion},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: message,
		Source: corev1.EventSource{Component: "kubelet", Host: node}, ReportingController: "kubelet", ReportingInstance: node,
		FirstTimestamp: now, LastTimestamp: now, Count: count}
	if _, err := cs.CoreV1().Events(pod.Namespace).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Event: %v", err)
	}
}
