/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestOwnerState(t *testing.T) {
	dep := &ObjectRef{Kind: "Deployment", Namespace: "ops", Name: "op"}
	for _, tc := range []struct {
		name string
		o    Owner
		want string
	}{
		{"unhealthy", Owner{State: OwnerDown, Workload: dep, Evidence: []string{"catalog: op", unhealthyPrefix + "Deployment ops/op at 0 of 2 ready (x)"}},
			"is installed but unhealthy: Deployment ops/op at 0 of 2 ready (x)"},
		{"scaled to 0", Owner{State: OwnerDown, Workload: dep, Evidence: []string{"installed but scaled to 0: Deployment ops/op has no replica"}},
			"is installed but scaled to 0: Deployment ops/op has no replica"},
		{"being deleted", Owner{State: OwnerDown, Workload: dep, Evidence: []string{"Deployment ops/op is being deleted"}}, "does not look alive (down)"},
		{"missing", Owner{State: OwnerMissing, Evidence: []string{"no Deployment ... was found"}}, "does not look alive (missing)"},
	} {
		if got := ownerState(&tc.o); got != tc.want {
			t.Errorf("%s: ownerState = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFirstLabel(t *testing.T) {
	for driver, want := range map[string]string{
		"ebs.csi.aws.com":        "ebs",
		"hostpath.csi.k8s.io":    "hostpath",
		"csi.teardown.test":      "teardown",
		"driver.longhorn.io":     "longhorn",
		"pd.csi.storage.gke.io":  "pd",
		"csi.vsphere.vmware.com": "vsphere",
	} {
		if got := firstLabel(driver); got != want {
			t.Errorf("firstLabel(%q) = %q, want %q", driver, got, want)
		}
	}
}

func TestOwnedByWorkload(t *testing.T) {
	dep := workload{Ref: ObjectRef{Kind: "Deployment", Namespace: "ops", Name: "op"}}
	sts := workload{Ref: ObjectRef{Kind: "StatefulSet", Namespace: "ops", Name: "op"}}
	pod := func(kind, name string, hash bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "p", Labels: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr.To(true)}}}}
		if hash {
			p.Labels["pod-template-hash"] = "5d8f"
		}
		return p
	}
	for _, tc := range []struct {
		name string
		p    *corev1.Pod
		w    workload
		want bool
	}{
		{"replicaset of the deployment", pod("ReplicaSet", "op-5d8f", true), dep, true},
		{"replicaset of another deployment", pod("ReplicaSet", "op2-5d8f", true), dep, false},
		{"replicaset of a deployment named after it", pod("ReplicaSet", "op-canary-5d8f", true), dep, false},
		{"statefulset", pod("StatefulSet", "op", false), sts, true},
		{"same name, other kind", pod("StatefulSet", "op", false), dep, false},
	} {
		if got := ownedByWorkload(tc.p, tc.w); got != tc.want {
			t.Errorf("%s: ownedByWorkload = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDeploymentHealth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conds []appsv1.DeploymentCondition
		want  string
	}{
		{"available", []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}, ""},
		{"no minimum availability", []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}},
			"Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.)"},
		{"pods refused", []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "pods \"op-1\" is forbidden: exceeded quota\n\u202e"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}},
			`ReplicaFailure=True (FailedCreate: pods "op-1" is forbidden: exceeded quota), Progressing=False (ProgressDeadlineExceeded)`},
		{"none", nil, ""},
	} {
		if diff := cmp.Diff(tc.want, deploymentHealth(tc.conds)); diff != "" {
			t.Errorf("%s: deploymentHealth (-want +got):\n%s", tc.name, diff)
		}
	}
}
