/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/cleantext"
	"github.com/teardown-dev/teardown/internal/policy"
)

// Environment variables that give a cleanup Job its target's identity.
const (
	EnvTargetAPIVersion = "TEARDOWN_TARGET_API_VERSION"
	EnvTargetKind       = "TEARDOWN_TARGET_KIND"
	EnvTargetNamespace  = "TEARDOWN_TARGET_NAMESPACE"
	EnvTargetName       = "TEARDOWN_TARGET_NAME"
	EnvTargetUID        = "TEARDOWN_TARGET_UID"
	EnvPolicy           = "TEARDOWN_POLICY"
)

// Labels on cleanup Jobs, to find them and to tell what they are for.
const (
	LabelPolicy    = "teardown.dev/policy"
	LabelTargetUID = "teardown.dev/target-uid"
	LabelStep      = "teardown.dev/step"
)

// JobName is the cleanup Job's name: stable for one policy, target and step,
// so that every attempt finds the Job an earlier one created.
func JobName(policyUID, targetUID, step string) string {
	sum := sha256.Sum256([]byte(policyUID + "/" + targetUID + "/" + step))
	return "teardown-" + hex.EncodeToString(sum[:])[:16]
}

// jobServiceAccount is the ServiceAccount a policy's Jobs run as: a
// TeardownPolicy's own identity; "" (the template's choice) for a
// ClusterTeardownPolicy.
func (r *Runner) jobServiceAccount(pol *policy.Policy) (string, error) {
	if r.Identities == nil {
		return "", nil
	}
	return r.Identities.ServiceAccount(pol)
}

// JobNamespace is where the Job runs: the step's namespace, else the
// policy's. A TeardownPolicy's Jobs run in its own namespace; a cluster
// policy's Job step must name one.
func JobNamespace(pol *policy.Policy, j *teardownv1alpha1.JobAction) (string, error) {
	if pol.Ref.Kind == policy.KindNamespaced && j.Namespace != "" && j.Namespace != pol.Ref.Namespace {
		return "", fmt.Errorf("job.namespace %s: a TeardownPolicy's Jobs run in its own namespace %s", j.Namespace, pol.Ref.Namespace)
	}
	if j.Namespace != "" {
		return j.Namespace, nil
	}
	if pol.Ref.Namespace != "" {
		return pol.Ref.Namespace, nil
	}
	return "", errors.New("job step of a ClusterTeardownPolicy must set job.namespace")
}

func (r *Runner) job(ctx context.Context, pol *policy.Policy, step teardownv1alpha1.Step, t Object) outcome {
	ns, err := JobNamespace(pol, step.Job)
	if err != nil {
		return transient(err)
	}
	reader, writer, err := r.clients(pol)
	if err != nil {
		return transient(err)
	}
	name := JobName(string(pol.UID), string(t.Obj.GetUID()), step.Name)
	// A cluster policy's Job runs in a namespace of its choosing, perhaps
	// not the target's: its messages then name neither (audience.go).
	readers := audienceOf(t)
	named := readers.name("Job", ns, name)
	job := &batchv1.Job{}
	err = reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)
	switch {
	case apierrors.IsNotFound(err):
		return r.createJob(ctx, writer, pol, step, t, ns, name)
	case err != nil:
		return transient(fmt.Errorf("reading %s: %w", named, readers.hide(ns, err)))
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			if err := removeJob(ctx, writer, job); err != nil {
				return transient(readers.hide(ns, err))
			}
			return done()
		case batchv1.JobFailed:
			// Removed so that a retry starts a fresh Job. Until it is
			// removed the failure is not reported, so that a Continue or
			// Release never leaves a failed Job behind.
			if err := removeJob(ctx, writer, job); err != nil {
				return transient(readers.hide(ns, err))
			}
			if !readers.MayName(ns) {
				// The condition's message may name the Job's pods.
				return failed(fmt.Errorf("%s failed: %s", named, cleantext.Clean(c.Reason, maxWebhookStatus)))
			}
			return failed(fmt.Errorf("%s failed: %s: %s", named, cleantext.Clean(c.Reason, maxWebhookStatus), cleantext.Clean(c.Message, maxWebhookMessage)))
		}
	}
	out := pending(0, "%s is running", named)
	out.waitingOn(batchv1.SchemeGroupVersion.WithKind("Job"), ns, name)
	return out
}

func (r *Runner) createJob(ctx context.Context, writer client.Client, pol *policy.Policy, step teardownv1alpha1.Step, t Object, ns, name string) outcome {
	readers := audienceOf(t)
	nsObj := &corev1.Namespace{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return transient(fmt.Errorf("reading the namespace of %s: %w", readers.name("Job", ns, name), readers.hide(ns, err)))
	}
	if nsObj.DeletionTimestamp != nil {
		where := "namespace " + ns
		if !readers.MayName(ns) {
			where = "the Job's namespace, " + readers.Elsewhere() + ","
		}
		return transient(fmt.Errorf("%s is terminating, so no Job can be created there; set job.namespace to run the cleanup elsewhere", where))
	}
	sa, err := r.jobServiceAccount(pol)
	if err != nil {
		return transient(err)
	}
	job := NewJob(pol, step, t, ns, sa)
	if err := writer.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return transient(fmt.Errorf("creating %s: %w", readers.name("Job", ns, name), readers.hide(ns, err)))
	}
	return pending(0, "started %s", readers.name("Job", ns, name))
}

// NewJob is the Job a job step creates in namespace ns for target t: the
// step's template, the target's identity in the environment, labels to find
// it by, no TTL. The policy controller dry-runs it to validate the template.
// A non-empty serviceAccount is the one its pods run as, whatever the
// template says (validation refuses a template naming another).
func NewJob(pol *policy.Policy, step teardownv1alpha1.Step, t Object, ns, serviceAccount string) *batchv1.Job {
	tmpl := step.Job.Template
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: JobName(string(pol.UID), string(t.Obj.GetUID()), step.Name), Namespace: ns,
			Labels:      map[string]string{},
			Annotations: map[string]string{},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	for k, v := range tmpl.Metadata.Labels {
		job.Labels[k] = v
	}
	for k, v := range tmpl.Metadata.Annotations {
		job.Annotations[k] = v
	}
	job.Labels[LabelPolicy] = labelValue(pol.Ref.Name)
	job.Labels[LabelTargetUID] = string(t.Obj.GetUID())
	job.Labels[LabelStep] = step.Name
	apiVersion, kind := t.GVK.ToAPIVersionAndKind()
	env := []corev1.EnvVar{
		{Name: EnvTargetAPIVersion, Value: apiVersion},
		{Name: EnvTargetKind, Value: kind},
		{Name: EnvTargetNamespace, Value: t.Obj.GetNamespace()},
		{Name: EnvTargetName, Value: t.Obj.GetName()},
		{Name: EnvTargetUID, Value: string(t.Obj.GetUID())},
		{Name: EnvPolicy, Value: pol.Ref.String()},
	}
	pod := &job.Spec.Template.Spec
	for i := range pod.InitContainers {
		pod.InitContainers[i].Env = append(pod.InitContainers[i].Env, env...)
	}
	for i := range pod.Containers {
		pod.Containers[i].Env = append(pod.Containers[i].Env, env...)
	}
	// The controller removes the Job once it has seen it finish; a TTL could
	// delete it first, and the cleanup would run again.
	job.Spec.TTLSecondsAfterFinished = nil
	if pod.RestartPolicy == "" {
		pod.RestartPolicy = corev1.RestartPolicyNever
	}
	if serviceAccount != "" {
		pod.ServiceAccountName, pod.DeprecatedServiceAccount = serviceAccount, ""
	}
	return job
}

// labelValue fits a name into a label value (63 characters): longer names
// are cut and suffixed with a hash, so they stay distinct.
func labelValue(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:46], "-_.") + "-" + hex.EncodeToString(sum[:8])
}

func removeJob(ctx context.Context, writer client.Client, job *batchv1.Job) error {
	err := writer.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}
