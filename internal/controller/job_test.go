/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func jobPolicy(ns, name, label string, onFailure teardownv1alpha1.FailureAction) *teardownv1alpha1.TeardownPolicy {
	return &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("job", label)}},
			Steps: []teardownv1alpha1.Step{{
				Name: "drain-agents", OnFailure: onFailure,
				Job: &teardownv1alpha1.JobAction{Template: teardownv1alpha1.JobTemplate{Spec: batchv1.JobSpec{
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "drain", Image: "busybox", Command: []string{"sh", "-c", "echo draining $TEARDOWN_TARGET_NAME"}}},
					}},
				}}},
			}},
		},
	}
}

// waitForJob waits for the cleanup Job of target and returns it.
func waitForJob(t *testing.T, pol *teardownv1alpha1.TeardownPolicy, target client.Object) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	key := client.ObjectKey{Namespace: pol.Namespace, Name: steps.JobName(string(pol.UID), string(target.GetUID()), "drain-agents")}
	testenv.Eventually(t, 20*time.Second, "the cleanup Job", func(ctx context.Context) (bool, error) {
		return k8s.Get(ctx, key, job) == nil, nil
	})
	return job
}

// finishJob plays the Job controller's part (no kubelet runs here): it marks
// the Job complete or failed.
func finishJob(t *testing.T, job *batchv1.Job, succeeded bool) {
	t.Helper()
	now := metav1.Now()
	job.Status.StartTime = &now
	if succeeded {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		conds, err := env.JobSucceededConditions(now)
		if err != nil {
			t.Fatal(err)
		}
		job.Status.Conditions = conds
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "drain script exited 1", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "drain script exited 1", LastTransitionTime: now},
		}
	}
	if err := k8s.Status().Update(t.Context(), job); err != nil {
		t.Fatalf("marking the Job finished: %v", err)
	}
}

// TestJobStepMustSucceedBeforeRelease: the cleanup Job carries the target's
// identity; the target stays until the Job completes, then goes, and the Job
// is removed.
func TestJobStepMustSucceedBeforeRelease(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := jobPolicy(ns, "agents", "ok", teardownv1alpha1.FailureRetry)
	create(t, pol)
	mustBeReady(t, pol)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "agent-config", Namespace: ns, Labels: map[string]string{"job": "ok"}}}
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(cm, ns+".teardown.dev/agents"))
	del(t, cm)
	job := waitForJob(t, pol, cm)

	env := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	want := map[string]string{
		steps.EnvTargetAPIVersion: "v1", steps.EnvTargetKind: "ConfigMap", steps.EnvTargetNamespace: ns,
		steps.EnvTargetName: "agent-config", steps.EnvTargetUID: string(cm.UID), steps.EnvPolicy: "TeardownPolicy " + ns + "/agents",
	}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("the Job's identity of its target (-want +got):\n%s", diff)
	}
	time.Sleep(time.Second)
	if ok, _ := hasFinalizer(cm, ns+".teardown.dev/agents")(t.Context()); !ok {
		t.Fatal("target released while its cleanup Job was still running")
	}
	finishJob(t, job, true)
	testenv.Eventually(t, 20*time.Second, "the target to be gone", testenv.Gone(k8s, cm))
	testenv.Eventually(t, 20*time.Second, "the Job to be removed", testenv.Gone(k8s, job))
}

// TestFailedJobWithReleasePolicy: a failing Job whose step says Release
// releases the target and records why.
func TestFailedJobWithReleasePolicy(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := jobPolicy(ns, "agents-release", "fail", teardownv1alpha1.FailureRelease)
	create(t, pol)
	mustBeReady(t, pol)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "agent-config", Namespace: ns, Labels: map[string]string{"job": "fail"},
		Finalizers: []string{"third.example.com/hold"}}}
	create(t, cm)
	key := ns + ".teardown.dev/agents-release"
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(cm, key))
	del(t, cm)
	finishJob(t, waitForJob(t, pol, cm), false)
	testenv.Eventually(t, 20*time.Second, "the finalizer to be released", lacksFinalizer(cm, key))
	note := waitForEvent(t, ns, cm.Name, finalizer.ReasonFinalizerReleased)
	if !strings.Contains(note, "drain-agents: failed") || !strings.Contains(note, "drain script exited 1") {
		t.Errorf("release Event says %q, want the step and the Job's failure", note)
	}
	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	progress := finalizer.ReadProgress(got)
	if len(progress) != 1 || progress[0].State != finalizer.StateRelease || !strings.Contains(progress[0].Message, "Release") {
		t.Errorf("progress record = %+v, want the release recorded", progress)
	}
}
