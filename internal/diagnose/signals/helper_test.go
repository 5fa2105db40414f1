/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestHelperRefs(t *testing.T) {
	cases := map[string]struct {
		text string
		want []string
	}{
		"local-path-provisioner's words": {
			text: `failed to delete volume pvc-47c7: failed to delete volume: pod helper-pod-delete-pvc-47c78805 failed`,
			want: []string{"Pod shop/helper-pod-delete-pvc-47c78805"},
		},
		"the API server's quoting and a Job in another namespace": {
			text: `create process timeout after 120 seconds; pods "cleanup-pvc-43c22848" is pending; Job rook-ceph/cluster-cleanup-job-node1 failed`,
			want: []string{"Pod shop/cleanup-pvc-43c22848", "Job rook-ceph/cluster-cleanup-job-node1"},
		},
		"English words are no names": {
			text: "the helper pod is pending and the job was not created",
			want: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, r := range HelperRefs(tc.text, "shop") {
				got = append(got, r.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("HelperRefs() -want +got:\n%s", diff)
			}
		})
	}
}

// TestHelperFailure: family 5 of the scenarios, from real threads: the
// helper's own failure, not only the owner's sentence.
func TestHelperFailure(t *testing.T) {
	pod := func(doc string) *corev1.Pod { return typed[corev1.Pod](t, doc) }
	cases := map[string]struct {
		thread     string
		pod        *corev1.Pod
		job        *batchv1.Job
		pods       []*corev1.Pod
		want       string
		wantAccess string
	}{
		"local-path helper pod failed: its termination message says permission denied": {
			thread: "https://github.com/rancher/local-path-provisioner/issues/181",
			pod: pod(`{metadata: {name: helper-pod-delete-pvc-47c78805, namespace: local-path-storage}, spec: {serviceAccountName: local-path-provisioner-service-account},
  status: {phase: Failed, containerStatuses: [{name: helper-pod, state: {terminated: {exitCode: 1, reason: Error, message: "rm: can't remove '/opt/local-path-provisioner/pvc-47c78805': Permission denied"}}}]}}`),
			want: "Pod local-path-storage/helper-pod-delete-pvc-47c78805: Failed: Error (exit 1): rm: can't remove '/opt/local-path-provisioner/pvc-47c78805': Permission denied",
		},
		"OpenEBS cleanup pod never scheduled: disk pressure taint": {
			thread: "https://github.com/openebs/dynamic-localpv-provisioner/issues/181",
			pod: pod(`{metadata: {name: cleanup-pvc-43c22848, namespace: openebs}, status: {phase: Pending,
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }, 2 node(s) didn't match Pod's node affinity/selector."}]}}`),
			want: "Pod openebs/cleanup-pvc-43c22848: Unschedulable: 0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }, 2 node(s) didn't match Pod's node affinity/selector.",
		},
		"Rook cleanup Job failed: its pod says why": {
			thread: "https://github.com/rook/rook/issues/16292",
			job:    typed[batchv1.Job](t, `{metadata: {name: cluster-cleanup-job-node1, namespace: rook-ceph}, spec: {template: {spec: {serviceAccountName: rook-ceph-purge-osd}}}, status: {conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, message: "Job has reached the specified backoff limit"}]}}`),
			pods: []*corev1.Pod{pod(`{metadata: {name: cluster-cleanup-job-node1-x2x9z, namespace: rook-ceph, labels: {batch.kubernetes.io/job-name: cluster-cleanup-job-node1}},
  status: {phase: Failed, containerStatuses: [{name: host-cleanup, state: {terminated: {exitCode: 1, reason: Error, message: "failed to sanitize osd 0. RuntimeError: No udev data could be retrieved for /dev/mapper/ceph--e872"}}}]}}`)},
			want: "Job rook-ceph/cluster-cleanup-job-node1: BackoffLimitExceeded; its Pod rook-ceph/cluster-cleanup-job-node1-x2x9z: Failed: Error (exit 1): failed to sanitize osd 0. RuntimeError: No udev data could be retrieved for /dev/mapper/ceph--e872",
		},
		"pre-delete hook Job past its deadline": {
			thread: "https://github.com/pravega/zookeeper-operator/issues/324",
			job:    typed[batchv1.Job](t, `{metadata: {name: zookeeper-operator-pre-delete, namespace: zk}, status: {conditions: [{type: Failed, status: "True", reason: DeadlineExceeded, message: "Job was active longer than specified deadline"}]}}`),
			want:   "Job zk/zookeeper-operator-pre-delete: DeadlineExceeded: Job was active longer than specified deadline",
		},
		"a cleanup pod forbidden: the access question for its ServiceAccount": {
			thread: "https://github.com/kube-logging/logging-operator/pull/1873",
			pod: pod(`{metadata: {name: finalizer-cleanup-7x2, namespace: logging}, spec: {serviceAccountName: cleanup},
  status: {phase: Failed, containerStatuses: [{name: c, state: {terminated: {exitCode: 1, message: "loggings.logging.banzaicloud.io \"main\" is forbidden: User \"system:serviceaccount:logging:cleanup\" cannot patch resource \"loggings\" in API group \"logging.banzaicloud.io\" at the cluster scope"}}}]}}`),
			want:       `Pod logging/finalizer-cleanup-7x2: Failed: Error (exit 1): loggings.logging.banzaicloud.io "main" is forbidden: User "system:serviceaccount:logging:cleanup" cannot patch resource "loggings" in API group "logging.banzaicloud.io" at the cluster scope`,
			wantAccess: "may system:serviceaccount:logging:cleanup patch loggings.logging.banzaicloud.io at the cluster scope",
		},
		"a running or succeeded helper has no failure": {
			pod:  pod(`{metadata: {name: helper-pod-delete-pvc-1, namespace: lp}, status: {phase: Running, containerStatuses: [{name: h, state: {running: {}}}]}}`),
			want: "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var f HelperFailure
			var ok bool
			if tc.job != nil {
				f, ok = JobFailure(tc.job, tc.pods)
			} else {
				f, ok = PodFailure(tc.pod)
			}
			got := ""
			if ok {
				got = f.String()
			}
			if got != tc.want {
				t.Errorf("%s:\n got %q\nwant %q", tc.thread, got, tc.want)
			}
			access := ""
			if f.Access != nil {
				access = f.Access.String()
			}
			if access != tc.wantAccess {
				t.Errorf("access question %q, want %q", access, tc.wantAccess)
			}
		})
	}
}
