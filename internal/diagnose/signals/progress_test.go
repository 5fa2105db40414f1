/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProgress: family 7 of the scenarios, from real threads: deletions
// progressing normally, which must not be called blocked, and deletions
// that look progressing but are not.
func TestProgress(t *testing.T) {
	pod := func(doc string) *corev1.Pod { return typed[corev1.Pod](t, doc) }
	warning := func(reason, msg string, count int32, first, last time.Duration) corev1.Event {
		return corev1.Event{Type: corev1.EventTypeWarning, Reason: reason, Message: msg, Count: count,
			FirstTimestamp: metav1.NewTime(now.Add(-first)), LastTimestamp: metav1.NewTime(now.Add(-last))}
	}
	readyNode := `{metadata: {name: worker-1}, status: {conditions: [{type: Ready, status: "True"}]}}`
	lostNode := `{metadata: {name: worker-9}, status: {conditions: [{type: Ready, status: Unknown, reason: NodeStatusUnknown}]}}`
	cases := map[string]struct {
		thread      string
		object      string
		events      []corev1.Event
		pods        []*corev1.Pod
		nodes       []string
		progressing bool
		for_        []string
		against     []string
	}{
		"progressing: a drain whose last pod is inside its grace period, on a Ready node": {
			thread:      "https://github.com/openshift/machine-api-operator/pull/780",
			object:      `{apiVersion: machine.openshift.io/v1beta1, kind: Machine, metadata: {name: m, namespace: openshift-machine-api, deletionTimestamp: "` + ago(3*time.Minute) + `"}}`,
			events:      []corev1.Event{warning("DrainRequeued", "Drain not completed yet, requeuing in 20s", 2, 2*time.Minute, 20*time.Second)},
			pods:        []*corev1.Pod{pod(`{metadata: {name: db-0, namespace: shop, deletionTimestamp: "` + in(7*time.Minute) + `"}, spec: {nodeName: worker-1}}`)},
			nodes:       []string{readyNode},
			progressing: true,
			for_: []string{
				"BoundedWait: Pod shop/db-0 is inside its grace period until 2026-11-28T12:07:00Z (7m from now)",
				"Change: Warning Event DrainRequeued, first said 2m ago: Drain not completed yet, requeuing in 20s",
			},
		},
		"progressing: a pod with a long grace period draining its sessions": {
			thread:      "https://github.com/Systemorph/MeshWeaver/pull/1969",
			object:      `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: portal-1, namespace: memex, deletionTimestamp: "` + ago(29*time.Minute) + `"}}`,
			pods:        []*corev1.Pod{pod(`{metadata: {name: portal-1-abc, namespace: memex, deletionTimestamp: "` + in(time.Minute) + `"}, spec: {terminationGracePeriodSeconds: 1800}}`)},
			progressing: true,
			for_:        []string{"BoundedWait: Pod memex/portal-1-abc is inside its grace period until 2026-11-28T12:01:00Z (1m from now)"},
		},
		"progressing: the owner's condition changed two minutes ago (the volumes it waited for went)": {
			thread: "https://github.com/rook/rook/issues/16216",
			object: `{apiVersion: ceph.rook.io/v1, kind: CephCluster, metadata: {name: rook-ceph, namespace: rook-ceph, deletionTimestamp: "` + ago(time.Hour) + `"},
  status: {conditions: [{type: Deleting, status: "True", reason: ClusterDeleting, message: "cleaning up hosts", lastTransitionTime: "` + ago(2*time.Minute) + `"}]}}`,
			progressing: true,
			for_:        []string{"Change: condition Deleting=True (ClusterDeleting: cleaning up hosts) changed 2m ago"},
		},
		"looks progressing, is not: the same Forbidden error for three days": {
			thread: "https://github.com/kubermatic/kubermatic/issues/7148",
			object: `{apiVersion: kubermatic.k8c.io/v1, kind: Cluster, metadata: {name: dgjrq9mzfh, deletionTimestamp: "` + ago(72*time.Hour) + `"},
  status: {conditions: [{type: ClusterControllerReconciledSuccessfully, status: "False", lastTransitionTime: "` + ago(72*time.Hour) + `"}]}}`,
			events:  []corev1.Event{warning("ReconcilingError", "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted", 812, 72*time.Hour, time.Minute)},
			against: []string{"Recurring: Warning ReconcilingError: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted said 812 times since 2026-11-25T12:00:00Z, last 1m ago, unchanged"},
		},
		"looks progressing, is not: a provider that cannot observe the external resource, every few minutes": {
			thread:  "https://github.com/crossplane-contrib/provider-pagerduty/issues/9",
			object:  `{apiVersion: escalation.pagerduty.crossplane.io/v1alpha1, kind: Policy, metadata: {name: p, deletionTimestamp: "` + ago(10*time.Minute) + `"}, status: {conditions: [{type: Synced, status: "False", reason: ReconcileError, lastTransitionTime: "` + ago(10*time.Minute) + `"}]}}`,
			events:  []corev1.Event{warning("CannotObserveExternalResource", "cannot run refresh: refresh failed", 4, 9*time.Minute+31*time.Second, 31*time.Second)},
			against: []string{"Recurring: Warning CannotObserveExternalResource: cannot run refresh: refresh failed said 4 times since 2026-11-28T11:50:29Z, last 31s ago, unchanged"},
		},
		"looks progressing, is not: the conflict on finalizer removal, again and again": {
			thread:  "https://github.com/kubernetes-sigs/cluster-api-provider-aws/issues/891",
			object:  `{apiVersion: cluster.k8s.io/v1alpha1, kind: Cluster, metadata: {name: cl-34bbaad7, namespace: default, deletionTimestamp: "` + ago(5*time.Hour) + `"}}`,
			events:  []corev1.Event{{Type: corev1.EventTypeWarning, Reason: "FailedDelete", Message: "Error removing finalizer: the object has been modified", Series: &corev1.EventSeries{Count: 57, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))}, EventTime: metav1.NewMicroTime(now.Add(-5 * time.Hour))}},
			against: []string{"Recurring: Warning FailedDelete: Error removing finalizer: the object has been modified said 57 times since 2026-11-28T07:00:00Z, last 1m ago, unchanged"},
		},
		"looks progressing, is not: the drain's last pod is on an unreachable node": {
			thread:  "https://github.com/openshift/machine-api-operator/pull/780",
			object:  `{apiVersion: machine.openshift.io/v1beta1, kind: Machine, metadata: {name: m, namespace: openshift-machine-api, deletionTimestamp: "` + ago(3*time.Minute) + `"}}`,
			pods:    []*corev1.Pod{pod(`{metadata: {name: db-1, namespace: shop, deletionTimestamp: "` + in(7*time.Minute) + `"}, spec: {nodeName: worker-9}}`)},
			nodes:   []string{lostNode},
			against: []string{"PastDeadline: Pod shop/db-1 is terminating on Node worker-9 (NotReady): nothing there will stop it"},
		},
		"looks progressing, is not: a pod long past its grace period": {
			thread:  "https://github.com/kubernetes-retired/multi-tenancy/issues/425",
			object:  `{apiVersion: tenancy.x-k8s.io/v1alpha1, kind: VirtualCluster, metadata: {name: vc, deletionTimestamp: "` + ago(2*time.Hour) + `"}}`,
			pods:    []*corev1.Pod{pod(`{metadata: {name: vc-etcd-0, namespace: vc, deletionTimestamp: "` + ago(90*time.Minute) + `"}}`)},
			against: []string{"PastDeadline: Pod vc/vc-etcd-0 is past its grace period by 1h30m"},
		},
		"the deletion itself is no progress: a transition at the deletion's own second": {
			object: `{apiVersion: x.io/v1, kind: Thing, metadata: {name: t, deletionTimestamp: "` + ago(time.Minute) + `"}, status: {conditions: [{type: Deleting, status: "True", lastTransitionTime: "` + ago(time.Minute) + `"}]}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := World{}
			for _, d := range tc.nodes {
				w.Nodes, w.NodesListed = append(w.Nodes, typed[corev1.Node](t, d)), true
			}
			a := Progress(ProgressInput{Object: obj(t, tc.object), Events: tc.events, Pods: tc.pods, World: w, Now: now})
			var forGot, againstGot []string
			for _, e := range a.For {
				forGot = append(forGot, e.String())
			}
			for _, e := range a.Against {
				againstGot = append(againstGot, e.String())
			}
			if a.Progressing != tc.progressing {
				t.Errorf("%s: Progressing = %v, want %v", tc.thread, a.Progressing, tc.progressing)
			}
			if diff := cmp.Diff(tc.for_, forGot); diff != "" {
				t.Errorf("%s: evidence for -want +got:\n%s", tc.thread, diff)
			}
			if diff := cmp.Diff(tc.against, againstGot); diff != "" {
				t.Errorf("%s: evidence against -want +got:\n%s", tc.thread, diff)
			}
		})
	}
}
