/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// waitForDiagnosis waits until pol's status.blockedObjects reports obj
// with a diagnosis of cause (any when empty) whose message contains want,
// and returns the entry.
func waitForDiagnosis(t *testing.T, pol client.Object, obj client.Object, cause, want string) teardownv1alpha1.BlockedObject {
	t.Helper()
	var found *teardownv1alpha1.BlockedObject
	var last string
	testenv.Eventually(t, 30*time.Second, "a "+cause+" diagnosis of "+obj.GetName(), func(ctx context.Context) (bool, error) {
		status, _, err := statusOf(ctx, pol)
		if err != nil {
			return false, err
		}
		for _, b := range status.BlockedObjects {
			if b.Object.Name != obj.GetName() || b.Object.Namespace != obj.GetNamespace() || b.Diagnosis == nil {
				continue
			}
			last = b.Diagnosis.Cause + ": " + b.Diagnosis.Message
			if (cause == "" || b.Diagnosis.Cause == cause) && strings.Contains(b.Diagnosis.Message, want) {
				found = &b
				return true, nil
			}
		}
		return false, nil
	})
	if found == nil {
		t.Fatalf("no %s diagnosis saying %q; last: %s", cause, want, last)
	}
	t.Logf("diagnosis: %+v", *found.Diagnosis)
	return *found
}

// waitNoBlockedObjects waits until pol's status.blockedObjects is empty.
func waitNoBlockedObjects(t *testing.T, pol client.Object) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "the entry to go", func(ctx context.Context) (bool, error) {
		status, _, err := statusOf(ctx, pol)
		return err == nil && len(status.BlockedObjects) == 0, err
	})
}

// setPodStatus writes a pod's status as the scheduler and the kubelet
// would (neither runs here).
func setPodStatus(t *testing.T, pod *corev1.Pod, status corev1.PodStatus) {
	t.Helper()
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = status
	if err := k8s.Status().Update(t.Context(), pod); err != nil {
		t.Fatalf("writing the status of pod %s: %v", pod.Name, err)
	}
}

// TestDiagnosisOfAJobStep: a job step's cleanup Job whose pod cannot be
// scheduled is diagnosed PodWaiting, naming the pod and the scheduler's
// words; once the pod runs, JobRunning; once the Job succeeds, the object
// goes and so does the entry.
func TestDiagnosisOfAJobStep(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := jobPolicy(ns, "diagnosed", ns, teardownv1alpha1.FailureRetry)
	create(t, pol)
	mustBeReady(t, pol)
	target := labelled(ns, "agents", "job", ns)
	create(t, target)
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(target, ns+".teardown.dev/diagnosed"))
	del(t, target)
	job := waitForJob(t, pol, target)

	// The Job controller's pod (no Job controller runs here either).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x7k2p", Namespace: ns, Labels: map[string]string{"job-name": job.Name}},
		Spec: *job.Spec.Template.Spec.DeepCopy()}
	create(t, pod)
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 Insufficient memory.", LastTransitionTime: metav1.Now()}}})
	d := waitForDiagnosis(t, pol, target, diagnosis.CausePodWaiting, "Pod "+ns+"/"+pod.Name+": a pod of Job "+ns+"/"+job.Name+", cannot run: Pending, Unschedulable: 0/3 nodes are available: 3 Insufficient memory.").Diagnosis
	if d.Blocker == nil || d.Blocker.Kind != "Pod" || d.Blocker.Name != pod.Name {
		t.Errorf("blocker = %+v, want pod %s", d.Blocker, pod.Name)
	}
	note := waitForEvent(t, ns, target.Name, teardownv1alpha1.TerminationBlockedReason)
	if !strings.Contains(note, diagnosis.CausePodWaiting) || !strings.Contains(note, "Insufficient memory") {
		t.Errorf("TerminationBlocked Event note = %q, want PodWaiting and the scheduler's words", note)
	}

	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}})
	waitForDiagnosis(t, pol, target, diagnosis.CauseJobRunning, "Job "+ns+"/"+job.Name+": runs (1 active pod(s))")

	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	finishJob(t, job, true)
	testenv.Eventually(t, 20*time.Second, "the target to go", testenv.Gone(k8s, target))
	waitNoBlockedObjects(t, pol)
}

// TestDiagnosisOfAnUnusedStep: an unused step held by a pod whose image
// cannot be pulled is diagnosed PodWaiting (the pod will not stop using it
// by itself finishing its work); by a pod that runs normally, StillInUse,
// naming the pod. The pod's deletion releases the object.
func TestDiagnosisOfAnUnusedStep(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	app := "held-" + ns
	pol := serveUnusedPolicy(t, "diag-unused-"+ns, teardownv1alpha1.Target{APIVersion: "v1", Kind: "Secret", Selector: selector("app", app)})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns, Labels: map[string]string{"app": app}}}
	create(t, secret)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
			Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name}}}}}}
	create(t, pod)
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(secret, "teardown.dev/"+pol.Name))
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", Image: "registry.invalid/app:1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.invalid/app:1"`}}}}})
	del(t, secret)

	d := waitForDiagnosis(t, pol, secret, diagnosis.CausePodWaiting, "Pod "+ns+"/reader: cannot run: container app ImagePullBackOff").Diagnosis
	if d.Blocker == nil || d.Blocker.Kind != "Pod" || d.Blocker.Name != pod.Name {
		t.Errorf("blocker = %+v, want pod %s", d.Blocker, pod.Name)
	}
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", Image: "registry.invalid/app:1", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}})
	d = waitForDiagnosis(t, pol, secret, diagnosis.CauseStillInUse, "Pod "+ns+"/reader: still runs (Running) and uses it").Diagnosis
	if d.Blocker == nil || d.Blocker.Name != pod.Name {
		t.Errorf("blocker = %+v, want pod %s", d.Blocker, pod.Name)
	}

	del(t, pod)
	testenv.Eventually(t, 20*time.Second, "the Secret to go", testenv.Gone(k8s, secret))
}

// TestPoliciesWaitingOnEachOtherAreSaid: policy deletes-b deletes the
// ConfigMaps labelled b when one labelled a goes, and waits for them to be
// gone; policy waits-for-a holds those until the ConfigMaps labelled a are
// gone. Deleting a leaves both cleanups waiting on each other for good:
// each policy's status names the cycle (WaitCycle) on its object, instead
// of saying only what each step waits on. Both stay guarded; breaking the
// cycle (an edit of one policy's steps) lets both go.
func TestPoliciesWaitingOnEachOtherAreSaid(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	deletesB := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deletes-b", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("role", "a")}},
			Steps: []teardownv1alpha1.Step{{Name: "delete-b", Delete: &teardownv1alpha1.DeleteAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("role", "b")}}}}},
		},
	}
	waitsForA := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "waits-for-a", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("role", "b")}},
			Steps: []teardownv1alpha1.Step{{Name: "a-gone", Wait: &teardownv1alpha1.WaitAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("role", "a")}}}}},
		},
	}
	for _, p := range []*teardownv1alpha1.TeardownPolicy{deletesB, waitsForA} {
		create(t, p)
		mustBeReady(t, p)
	}
	a, b := labelled(ns, "a", "role", "a"), labelled(ns, "b", "role", "b")
	create(t, a)
	create(t, b)
	testenv.Eventually(t, 20*time.Second, "a guarded", hasFinalizer(a, ns+".teardown.dev/deletes-b"))
	testenv.Eventually(t, 20*time.Second, "b guarded", hasFinalizer(b, ns+".teardown.dev/waits-for-a"))
	del(t, a)

	for _, c := range []struct {
		pol       client.Object
		obj       client.Object
		mentioned []string
	}{
		{deletesB, a, []string{"ConfigMap " + ns + "/b: the cleanup of ConfigMap " + ns + "/a (step delete-b of TeardownPolicy " + ns + "/deletes-b) waits on it, " +
			"and its own cleanup (step a-gone of TeardownPolicy " + ns + "/waits-for-a) waits on ConfigMap " + ns + "/a"}},
		{waitsForA, b, []string{"ConfigMap " + ns + "/a: the cleanup of ConfigMap " + ns + "/b (step a-gone of TeardownPolicy " + ns + "/waits-for-a) waits on it, " +
			"and its own cleanup (step delete-b of TeardownPolicy " + ns + "/deletes-b) waits on ConfigMap " + ns + "/b"}},
	} {
		blocked := waitForDiagnosis(t, c.pol, c.obj, diagnose.CauseWaitCycle, "none can finish")
		for _, m := range c.mentioned {
			if !strings.Contains(blocked.Diagnosis.Message, m) {
				t.Errorf("%s's diagnosis %q does not say %q", c.obj.GetName(), blocked.Diagnosis.Message, m)
			}
		}
	}
	for _, obj := range []client.Object{a, b} {
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("%s went while the cleanups waited on each other: %v", obj.GetName(), err)
		}
	}
	// kubectl teardown explain, as a user who may read everything, says the
	// cycle the controller found (not STALLED).
	kubeconfig := plugintest.ReadOnlyKubeconfig(t, cfg, kubernetes.NewForConfigOrDie(cfg), "explains-cycles")
	r := plugintest.Run(plugin.Execute, kubeconfig, "explain", "configmap/a", "-n", ns, "-o", "json")
	var rep diagnose.Report
	if err := json.Unmarshal([]byte(r.Out), &rep); err != nil {
		t.Fatalf("explain -o json: exit %d, %v\n%s%s", r.Code, err, r.Out, r.Err)
	}
	if rep.Verdict != diagnose.VerdictBlocked || len(rep.RootBlockers) == 0 || rep.RootBlockers[0].Cause != diagnose.CauseWaitCycle {
		t.Fatalf("explain says %s, roots %+v; want Blocked by %s\n%s", rep.Verdict, rep.RootBlockers, diagnose.CauseWaitCycle, r.Out)
	}
	root := rep.RootBlockers[0]
	for _, m := range []string{"TeardownPolicy " + ns + "/deletes-b says its step delete-b waits in a cycle", "step a-gone of TeardownPolicy " + ns + "/waits-for-a"} {
		if !strings.Contains(root.Message, m) {
			t.Errorf("explain's root %q does not say %q", root.Message, m)
		}
	}
	if root.Object == nil || root.Object.String() != "ConfigMap "+ns+"/b" {
		t.Errorf("explain's root names %v, want ConfigMap %s/b", root.Object, ns)
	}
	// Breaking the cycle lets both go.
	editPolicy(t, waitsForA, func(s *teardownv1alpha1.TeardownPolicySpec) {
		s.Steps[0].Wait.Resources[0].Selector = selector("role", "never")
	})
	testenv.Eventually(t, 30*time.Second, "a gone", testenv.Gone(k8s, a))
	testenv.Eventually(t, 30*time.Second, "b gone", testenv.Gone(k8s, b))
}
