/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestActorPlaces: family 3 of the scenarios, from real threads: the place
// where the remover must act, named by the object, judged.
func TestActorPlaces(t *testing.T) {
	nodes := func(docs ...string) []*corev1.Node {
		var out []*corev1.Node
		for _, d := range docs {
			out = append(out, typed[corev1.Node](t, d))
		}
		return out
	}
	cases := map[string]struct {
		thread string
		doc    string
		world  World
		want   []string
	}{
		"Karmada Work in the execution namespace of a member cluster that is not Ready": {
			thread: "https://github.com/karmada-io/karmada/issues/3740",
			doc:    `{apiVersion: work.karmada.io/v1alpha1, kind: Work, metadata: {name: nginx-687f7fb96f, namespace: karmada-es-member1, finalizers: [karmada.io/execution-controller]}}`,
			world: World{ClustersListed: true, Clusters: objs(t,
				`{apiVersion: cluster.karmada.io/v1alpha1, kind: Cluster, metadata: {name: member1}, status: {conditions: [{type: Ready, status: "False", reason: ClusterNotReachable, message: "cluster is not reachable", lastTransitionTime: "`+ago(3*time.Hour)+`"}]}}`,
				`{apiVersion: cluster.karmada.io/v1alpha1, kind: Cluster, metadata: {name: member2}, status: {conditions: [{type: Ready, status: "True"}]}}`)},
			want: []string{"Cluster member1 (namespace karmada-es-member1): NotReady, Cluster Ready=False (ClusterNotReachable: cluster is not reachable) for 3h"},
		},
		"Karmada pull-mode member whose agent stopped posting status": {
			thread: "https://github.com/karmada-io/karmada/issues/1847",
			doc:    `{apiVersion: work.karmada.io/v1alpha1, kind: Work, metadata: {name: w, namespace: karmada-es-member4}}`,
			world: World{ClustersListed: true, Clusters: objs(t,
				`{apiVersion: cluster.karmada.io/v1alpha1, kind: Cluster, metadata: {name: member4}, spec: {syncMode: Pull}, status: {conditions: [{type: Ready, status: Unknown, reason: ClusterStatusUnknown, message: "Cluster status controller stopped posting cluster status.", lastTransitionTime: "`+ago(17*time.Hour)+`"}]}}`)},
			want: []string{"Cluster member4 (namespace karmada-es-member4): NotReady, Cluster Ready=Unknown (ClusterStatusUnknown: Cluster status controller stopped posting cluster status.) for 17h"},
		},
		"OCM ManifestWork in the namespace named after its ManagedCluster, availability Unknown": {
			thread: "https://github.com/open-cluster-management-io/clusteradm/issues/159",
			doc:    `{apiVersion: work.open-cluster-management.io/v1, kind: ManifestWork, metadata: {name: addon-work-manager-deploy, namespace: itdove2-4-10, finalizers: [cluster.open-cluster-management.io/manifest-work-cleanup]}}`,
			world: World{ClustersListed: true, Clusters: objs(t,
				`{apiVersion: cluster.open-cluster-management.io/v1, kind: ManagedCluster, metadata: {name: itdove2-4-10}, status: {conditions: [{type: HubAcceptedManagedCluster, status: "True"}, {type: ManagedClusterJoined, status: "True"}, {type: ManagedClusterConditionAvailable, status: Unknown, reason: ManagedClusterLeaseUpdateStopped, message: "Registration agent stopped updating its lease."}]}}`)},
			want: []string{"Cluster itdove2-4-10 (namespace itdove2-4-10): NotReady, ManagedCluster ManagedClusterConditionAvailable=Unknown (ManagedClusterLeaseUpdateStopped: Registration agent stopped updating its lease.)"},
		},
		"a mirror whose source-side agent runs on a node that stopped heartbeating but still says Ready": {
			thread: "https://github.com/qvest-digital/mxl-k8s/issues/193",
			doc:    `{apiVersion: mxl.qvest-digital.com/v1alpha1, kind: MxlFlowMirror, metadata: {name: m, namespace: media, finalizers: [gateway.mxl.qvest-digital.com/source-side]}, spec: {source: {nodeName: edge-3, flow: f1}}}`,
			world: World{NodesListed: true,
				Nodes:      nodes(`{metadata: {name: edge-3}, status: {conditions: [{type: Ready, status: "True"}]}}`),
				NodeLeases: []*coordinationv1.Lease{typed[coordinationv1.Lease](t, `{metadata: {name: edge-3, namespace: kube-node-lease}, spec: {renewTime: "`+now.Add(-40*time.Minute).Format("2006-01-02T15:04:05.000000Z07:00")+`"}}`)},
			},
			want: []string{"Node edge-3 (spec.source.nodeName): HeartbeatStale, Ready=True but its Lease was last renewed 40m ago"},
		},
		"a VirtualMachineInstance whose virt-handler's node was power-cycled": {
			thread: "https://github.com/kubernetes/kubernetes/issues/122960",
			doc:    `{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, metadata: {name: centos, namespace: vms, labels: {kubevirt.io/nodeName: worker-2}, finalizers: [kubevirt.io/virtualMachineControllerFinalize]}, status: {nodeName: worker-2}}`,
			world:  World{NodesListed: true, Nodes: nodes(`{metadata: {name: worker-2}, status: {conditions: [{type: Ready, status: Unknown, reason: NodeStatusUnknown, message: "Kubelet stopped posting node status.", lastTransitionTime: "` + ago(25*time.Minute) + `"}]}}`)},
			want:   []string{"Node worker-2 (status.nodeName): NotReady, Ready=Unknown (NodeStatusUnknown: Kubelet stopped posting node status.) for 25m"},
		},
		"a node that is gone; a zone with no Ready node left": {
			doc:   `{apiVersion: example.io/v1, kind: Agent, metadata: {name: a, labels: {topology.kubernetes.io/zone: eu-1c}}, spec: {nodeName: old-node}}`,
			world: World{NodesListed: true, Nodes: nodes(`{metadata: {name: n1, labels: {topology.kubernetes.io/zone: eu-1c}}, status: {conditions: [{type: Ready, status: "False"}]}}`)},
			want: []string{
				"Node old-node (spec.nodeName): Missing, no such Node",
				"Zone eu-1c (label topology.kubernetes.io/zone): NotReady, none of its 1 Nodes is Ready",
			},
		},
		"progressing: the member cluster is Ready and reporting": {
			thread: "https://github.com/karmada-io/karmada/pull/1053",
			doc:    `{apiVersion: work.karmada.io/v1alpha1, kind: Work, metadata: {name: w, namespace: karmada-es-member2}}`,
			world:  World{ClustersListed: true, Clusters: objs(t, `{apiVersion: cluster.karmada.io/v1alpha1, kind: Cluster, metadata: {name: member2}, status: {conditions: [{type: Ready, status: "True", lastHeartbeatTime: "`+ago(time.Minute)+`"}]}}`)},
			want:   []string{"Cluster member2 (namespace karmada-es-member2): Healthy, Cluster Ready=True"},
		},
		"a database's cluster field names no member cluster": {
			thread: "https://github.com/karmada-io/karmada/issues/3740",
			doc:    `{apiVersion: postgresql.cnpg.io/v1, kind: ScheduledBackup, metadata: {name: b, namespace: db}, spec: {clusterName: pg, cluster: {name: pg}}}`,
			world:  World{ClustersListed: true, Clusters: objs(t, `{apiVersion: cluster.karmada.io/v1alpha1, kind: Cluster, metadata: {name: member1}}`)},
			want:   nil,
		},
		"not read: Nodes were not listed, a pod's hostname is no node": {
			doc:   `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: d}, spec: {nodeName: n9, hostname: box}}`,
			world: World{},
			want:  []string{"Node n9 (spec.nodeName): Unknown, Nodes were not read"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.world.Now = now
			var got []string
			for _, v := range ActorPlaces(obj(t, tc.doc), tc.world) {
				got = append(got, v.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: ActorPlaces() -want +got:\n%s", tc.thread, diff)
			}
		})
	}
}
