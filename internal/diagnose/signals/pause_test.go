/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPaused: each case is a deletion from a real thread (docs in
// /work/wt-families-notes/scenarios.md, family 1) or a look-alike that
// must not count.
func TestPaused(t *testing.T) {
	type mark struct {
		Mark   Mark
		Source string
		Holder string
	}
	cases := map[string]struct {
		thread string
		doc    string
		want   []mark
	}{
		"crossplane claim paused, Synced=False ReconcilePaused while Ready=True": {
			thread: "https://github.com/crossplane/crossplane/issues/4839",
			doc: `
apiVersion: example.org/v1alpha1
kind: PostgresInstance
metadata:
  name: db
  namespace: example
  annotations: {crossplane.io/paused: "true"}
  finalizers: [finalizer.apiextensions.crossplane.io]
status:
  conditions:
  - {type: Ready, status: "True", reason: Available}
  - {type: Synced, status: "False", reason: ReconcilePaused, lastTransitionTime: "2026-11-27T10:00:00Z"}
`,
			want: []mark{
				{MarkPaused, "annotation crossplane.io/paused=true", ""},
				{MarkPaused, "condition Synced=False (ReconcilePaused)", ""},
			},
		},
		"Cluster API paused annotation counts by presence, empty value": {
			thread: "https://github.com/kubernetes-sigs/cluster-api-provider-aws/issues/4584",
			doc: `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSCluster
metadata:
  name: foo
  namespace: default
  annotations: {cluster.x-k8s.io/paused: ""}
  finalizers: [awscluster.infrastructure.cluster.x-k8s.io]
status:
  conditions:
  - {type: Ready, status: "True"}
`,
			want: []mark{{MarkPaused, "annotation cluster.x-k8s.io/paused", ""}},
		},
		"Flux source suspended by spec.suspend": {
			thread: "https://github.com/fluxcd/source-controller/issues/934",
			doc: `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: podinfo, namespace: flux-system, finalizers: [finalizers.fluxcd.io]}
spec: {suspend: true, interval: 1m}
status:
  conditions:
  - {type: Ready, status: "True", reason: Succeeded}
`,
			want: []mark{{MarkSuspended, "spec.suspend", ""}},
		},
		"Machine held by a pre-terminate hook, owner named by the hook": {
			thread: "https://github.com/kubernetes-sigs/cluster-api/pull/11161",
			doc: `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata:
  name: cp-0
  namespace: default
  annotations: {pre-terminate.delete.hook.machine.cluster.x-k8s.io/kcp-cleanup: ""}
  finalizers: [machine.cluster.x-k8s.io]
status:
  conditions:
  - {type: PreTerminateDeleteHookSucceeded, status: "False", reason: WaitingExternalHook, message: "Waiting for pre-terminate hooks: kcp-cleanup"}
  - {type: Ready, status: "True"}
`,
			want: []mark{
				{MarkHook, "annotation pre-terminate.delete.hook.machine.cluster.x-k8s.io/kcp-cleanup", "kcp-cleanup"},
				{MarkHook, "condition PreTerminateDeleteHookSucceeded=False (WaitingExternalHook: Waiting for pre-terminate hooks: kcp-cleanup)", ""},
			},
		},
		"Gardener machine: instance deletion suspended, owner in the value": {
			thread: "https://github.com/gardener/machine-controller-manager/pull/1158",
			doc: `
apiVersion: machine.sapcloud.io/v1alpha1
kind: Machine
metadata:
  name: m-1
  namespace: shoot--a--b
  annotations: {suspend-instance-deletion.node.machine.sapcloud.io/etcd-member-removal: my-controller}
status:
  conditions:
  - {type: InstanceDeletionSuspended, status: "True", message: "held by my-controller for etcd-member-removal"}
`,
			want: []mark{
				{MarkSuspended, "annotation suspend-instance-deletion.node.machine.sapcloud.io/etcd-member-removal=my-controller", "my-controller"},
				{MarkSuspended, "condition InstanceDeletionSuspended=True (held by my-controller for etcd-member-removal)", ""},
			},
		},
		"kubermatic cluster paused by spec.pause": {
			thread: "https://github.com/kubermatic/kubermatic/issues/1563",
			doc: `
apiVersion: kubermatic.k8c.io/v1
kind: Cluster
metadata: {name: abc, finalizers: [kubermatic.io/delete-nodes]}
spec: {pause: true}
`,
			want: []mark{{MarkPaused, "spec.pause", ""}},
		},
		"EKS Anywhere paused annotation": {
			thread: "https://github.com/aws/eks-anywhere/pull/4234",
			doc: `
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata:
  name: w1
  namespace: default
  annotations: {anywhere.eks.amazonaws.com/paused: "true"}
`,
			want: []mark{{MarkPaused, "annotation anywhere.eks.amazonaws.com/paused=true", ""}},
		},
		"a condition blocked by another object": {
			thread: "https://github.com/apecloud/kubeblocks/issues/8594",
			doc: `
apiVersion: apps.kubeblocks.io/v1
kind: Component
metadata: {name: c, namespace: ns}
status:
  conditions:
  - {type: Deleting, status: "False", reason: PreTerminateFailed, message: "blocked by the pre-terminate action of pod c-0"}
`,
			want: []mark{{MarkBlockedBy, "condition Deleting=False (PreTerminateFailed: blocked by the pre-terminate action of pod c-0)", ""}},
		},
		"not paused: paused=false, Paused=False, Unpaused, a webhook failure, a hook that succeeded": {
			doc: `
apiVersion: example.org/v1
kind: Thing
metadata:
  name: t
  annotations: {crossplane.io/paused: "false", kubectl.kubernetes.io/last-applied-configuration: "{}"}
spec: {suspend: false, paused: false}
status:
  conditions:
  - {type: Paused, status: "False", reason: NotPaused}
  - {type: Synced, status: "True", reason: Unpaused}
  - {type: Ready, status: "False", reason: WebhookFailed, message: "calling webhook"}
  - {type: PreDrainDeleteHookSucceeded, status: "True", reason: HookSucceeded}
`,
			want: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []mark
			for _, s := range Paused(obj(t, tc.doc)) {
				got = append(got, mark{s.Mark, s.Source, s.Holder})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: Paused() -want +got:\n%s", tc.thread, diff)
			}
		})
	}
}
