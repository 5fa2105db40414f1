/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHelperPodFailureIsThePodJudgement: family 5 reads a helper pod's
// failure from the engine's one pod judgement, so a helper fails exactly
// when the engine says a pod cannot run or failed (a container waiting for
// any reason but starting; the scheduler finding no node, not a pod held
// by its scheduling gates), and the kubelet's reason is cleaned as its
// message is.
func TestHelperPodFailureIsThePodJudgement(t *testing.T) {
	pod := func(doc string) *corev1.Pod { return typed[corev1.Pod](t, doc) }
	cases := map[string]struct {
		pod  *corev1.Pod
		want string // PodFailure's words; "" for no failure
	}{
		"a container that can never pull (ErrImageNeverPull)": {
			pod:  pod(`{metadata: {name: cleanup-x1, namespace: ops}, spec: {nodeName: n1}, status: {phase: Pending, containerStatuses: [{name: c, state: {waiting: {reason: ErrImageNeverPull, message: "Container image \"cleanup:v1\" is not present with pull policy of Never"}}}]}}`),
			want: `Pod ops/cleanup-x1: ErrImageNeverPull: Container image "cleanup:v1" is not present with pull policy of Never`,
		},
		"a pod held by its scheduling gates": {
			pod: pod(`{metadata: {name: cleanup-x2, namespace: ops}, status: {phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: SchedulingGated, message: "Scheduling is blocked due to non-empty scheduling gates"}]}}`),
		},
		"a starting container": {
			pod: pod(`{metadata: {name: cleanup-x3, namespace: ops}, spec: {nodeName: n1}, status: {phase: Pending, containerStatuses: [{name: c, state: {waiting: {reason: ContainerCreating}}}]}}`),
		},
		"a reason written with a line break and a bidi override": {
			pod:  pod(`{metadata: {name: cleanup-x4, namespace: ops}, spec: {nodeName: n1}, status: {phase: Running, containerStatuses: [{name: c, state: {waiting: {reason: "CrashLoopBackOff\n\u202eSUCCESS", message: "back-off"}}}]}}`),
			want: "Pod ops/cleanup-x4: CrashLoopBackOff SUCCESS: back-off",
		},
		"a failed pod's evicted reason": {
			pod:  pod(`{metadata: {name: cleanup-x5, namespace: ops}, status: {phase: Failed, reason: "Evicted\n", message: "The node was low on resource: ephemeral-storage."}}`),
			want: "Pod ops/cleanup-x5: Failed: Evicted: The node was low on resource: ephemeral-storage.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if f, ok := PodFailure(tc.pod); ok {
				got = f.String()
			}
			if got != tc.want {
				t.Errorf("PodFailure = %q, want %q", got, tc.want)
			}
			j := JudgePod(tc.pod)
			if failed := j.Failed || j.CannotRun; failed != (tc.want != "") {
				t.Errorf("JudgePod = %+v, but PodFailure says failed %t", j, tc.want != "")
			}
		})
	}
}
