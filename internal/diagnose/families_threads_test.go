/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/diagnose/kube/kubefake"
	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// threadScenario is one stuck (or progressing) deletion of issue 26's
// proof, rebuilt from a real issue thread: the objects the cluster holds,
// and what explain must answer (its verdict, its first root blocker's cause
// and the object that blocker names).
type threadScenario struct {
	family int
	thread string
	// target is the object explained (YAML); resource its plural.
	target, resource string
	cluster          []string
	// operator: the target's finalizer was written by "operator", a
	// Deployment that runs (a custom resource's running owner).
	operator bool
	// deny are the users whose SubjectAccessReviews are denied.
	deny []string
	// verdict is explain's verdict; cause and names the first root
	// blocker's cause and object ("" for no root blocker).
	verdict, cause, names string
	// owner is the state of the finalizer's owner, when the scenario is
	// about who the owner is (family 4).
	owner string
	// says is what the first root blocker's message must say, if any.
	says string
}

// runningOperator runs "/operator", the client named "operator" that wrote
// the finalizers of the scenarios with operator set.
const runningOperator = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: operator, namespace: operators, labels: {app: operator}},
  spec: {replicas: 1, selector: {matchLabels: {app: operator}}, template: {metadata: {labels: {app: operator}}, spec: {serviceAccountName: operator, containers: [{name: operator, image: example.io/operator:v1, command: [/operator]}]}}},
  status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`

// threadScenarios are issue 26's new scenarios, at least four per family,
// none a variant of the families' earlier ones (families_test.go and
// internal/diagnose/signals), each from the thread it cites.
func threadScenarios() map[string]threadScenario {
	ago := func(d time.Duration) string { return familyNow.Add(-d).Format(time.RFC3339) }
	in := func(d time.Duration) string { return familyNow.Add(d).Format(time.RFC3339) }
	readyNode := func(name string) string {
		return `{apiVersion: v1, kind: Node, metadata: {name: ` + name + `}, status: {conditions: [{type: Ready, status: "True", lastTransitionTime: "` + ago(72*time.Hour) + `"}]}}`
	}
	progress := func(fin string, next time.Time) string {
		p := record.Progress{Finalizer: fin, State: "Pending", Message: "final backup job running", Attempts: 3, Updated: familyNow.Add(-20 * time.Second), NextAttempt: &next}
		j, _ := json.Marshal(p)
		return fmt.Sprintf("%q: %q", record.ProgressAnnotation(fin), string(j))
	}
	return map[string]threadScenario{
		// Family 1: the object's own "do not proceed" marks.
		"1: a paused ThanosRuler (spec.paused)": {family: 1, operator: true,
			thread:   "https://github.com/prometheus-operator/prometheus-operator/pull/8339",
			target:   `{apiVersion: monitoring.coreos.com/v1, kind: ThanosRuler, metadata: {name: thanos, namespace: monitoring, uid: tr-1, deletionTimestamp: "` + ago(2*time.Hour) + `", finalizers: [monitoring.coreos.com/status-cleanup]}, spec: {paused: true, queryEndpoints: ["http://thanos-query:9090"]}}`,
			resource: "thanosrulers",
			verdict:  VerdictBlocked, cause: CauseObjectPaused, names: "ThanosRuler monitoring/thanos",
		},
		"1: a vSphere VirtualMachine paused by its devops annotation": {family: 1, operator: true,
			thread:   "https://github.com/vmware-tanzu/vm-operator/pull/620",
			target:   `{apiVersion: vmoperator.vmware.com/v1alpha3, kind: VirtualMachine, metadata: {name: vm-1, namespace: dev, uid: vm-1, deletionTimestamp: "` + ago(3*time.Hour) + `", annotations: {vmoperator.vmware.com/paused: devops}, finalizers: [vmoperator.vmware.com/virtualmachine]}, spec: {className: best-effort-small, imageName: ubuntu-22.04, powerState: PoweredOn}}`,
			resource: "virtualmachines",
			verdict:  VerdictBlocked, cause: CauseObjectPaused, names: "VirtualMachine dev/vm-1",
		},
		"1: a CephFilesystem whose DeletionIsBlocked condition says it has dependents": {family: 1, operator: true,
			thread: "https://github.com/rook/rook/pull/9915",
			target: `{apiVersion: ceph.rook.io/v1, kind: CephFilesystem, metadata: {name: myfs, namespace: rook-ceph, uid: fs-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [cephfilesystem.ceph.rook.io]},
  status: {phase: Deleting, conditions: [{type: DeletionIsBlocked, status: "True", reason: ObjectHasDependents, message: "object deletion is blocked because it has dependents", lastTransitionTime: "` + ago(time.Hour) + `"}]}}`,
			resource: "cephfilesystems",
			verdict:  VerdictBlocked, cause: CauseObjectPaused, names: "CephFilesystem rook-ceph/myfs",
		},
		"1: a Central whose pause-reconcile annotation holds its deprovisioning": {family: 1, operator: true,
			thread:   "https://github.com/stackrox/acs-fleet-manager/pull/1083",
			target:   `{apiVersion: platform.stackrox.io/v1alpha1, kind: Central, metadata: {name: central, namespace: rhacs-abc, uid: c-1, deletionTimestamp: "` + ago(40*time.Minute) + `", annotations: {stackrox.io/pause-reconcile: "true"}, finalizers: [uninstall-helm-release]}, spec: {central: {exposure: {route: {enabled: true}}}}}`,
			resource: "centrals",
			verdict:  VerdictBlocked, cause: CauseObjectPaused, names: "Central rhacs-abc/central",
		},

		// Family 2: the objects that name the target.
		"2: a PersistentVolume its claim still names (spec.volumeName)": {family: 2,
			thread: "https://github.com/kubernetes/kubernetes/issues/78106",
			target: `{apiVersion: v1, kind: PersistentVolume, metadata: {name: elasticsearch-data-001, uid: pv-1, deletionTimestamp: "` + ago(5*time.Hour) + `", finalizers: [kubernetes.io/pv-protection]},
  spec: {capacity: {storage: 2Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /mnt/k8s-pv/es-data-001}, storageClassName: esdata, claimRef: {kind: PersistentVolumeClaim, namespace: abc, name: data-elasticsearch-data-0}}, status: {phase: Bound}}`,
			resource: "persistentvolumes",
			cluster: []string{
				`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data-elasticsearch-data-0, namespace: abc, uid: pvc-1}, spec: {accessModes: [ReadWriteOnce], storageClassName: esdata, volumeName: elasticsearch-data-001, resources: {requests: {storage: 1Gi}}}, status: {phase: Bound}}`,
			},
			verdict: VerdictBlocked, names: "PersistentVolumeClaim abc/data-elasticsearch-data-0",
		},
		"2: a CephFilesystem named by a CephFilesystemSubVolumeGroup": {family: 2, operator: true,
			thread:   "https://github.com/rook/rook/issues/14171",
			target:   `{apiVersion: ceph.rook.io/v1, kind: CephFilesystem, metadata: {name: myfs, namespace: rook-ceph, uid: fs-2, deletionTimestamp: "` + ago(2*time.Hour) + `", finalizers: [cephfilesystem.ceph.rook.io]}, spec: {metadataServer: {activeCount: 1}}}`,
			resource: "cephfilesystems",
			cluster: []string{
				`{apiVersion: ceph.rook.io/v1, kind: CephFilesystemSubVolumeGroup, metadata: {name: myfs-csi, namespace: rook-ceph, uid: svg-1}, spec: {filesystemName: myfs}}`,
			},
			verdict: VerdictBlocked, cause: CauseInUseBy, names: "CephFilesystemSubVolumeGroup rook-ceph/myfs-csi",
		},
		"2: a PersistentVolume a VolumeAttachment still names": {family: 2,
			thread: "https://github.com/kubernetes-csi/external-attacher/issues/66",
			target: `{apiVersion: v1, kind: PersistentVolume, metadata: {name: pvc-c39b0473, uid: pv-2, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [external-attacher/com-google-csi-gcepd]},
  spec: {capacity: {storage: 5Gi}, accessModes: [ReadWriteOnce], csi: {driver: com.google.csi.gcepd, volumeHandle: vol-1}}, status: {phase: Released}}`,
			resource: "persistentvolumes",
			cluster: []string{
				`{apiVersion: storage.k8s.io/v1, kind: VolumeAttachment, metadata: {name: csi-d4935b83, uid: va-1, finalizers: [external-attacher/com-google-csi-gcepd]}, spec: {attacher: com.google.csi.gcepd, nodeName: kubernetes-minion-group-11bk, source: {persistentVolumeName: pvc-c39b0473}}, status: {attached: false, attachError: {message: "PersistentVolume \"pvc-c39b0473\" is marked for deletion", time: "` + ago(time.Hour) + `"}}}`,
				readyNode("kubernetes-minion-group-11bk"),
				`{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: csi-gce-pd-controller, namespace: kube-system}, spec: {replicas: 1, selector: {matchLabels: {app: gcp-compute-persistent-disk-csi-driver}}, template: {metadata: {labels: {app: gcp-compute-persistent-disk-csi-driver}}, spec: {serviceAccountName: csi-controller-sa, containers: [{name: csi-attacher, image: "quay.io/k8scsi/csi-attacher:v0.3.0", args: ["--csi-address=/csi/csi.sock"]}, {name: gce-pd-driver, image: "gcr.io/gke-release/gcp-compute-persistent-disk-csi-driver:v0.1.0"}]}}}, status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`,
			},
			verdict: VerdictBlocked, names: "VolumeAttachment csi-d4935b83",
		},
		"2: a Longhorn Volume whose Snapshot still names it": {family: 2, operator: true,
			thread:   "https://github.com/longhorn/longhorn/issues/4278",
			target:   `{apiVersion: longhorn.io/v1beta2, kind: Volume, metadata: {name: pvc-4f1d, namespace: longhorn-system, uid: lv-1, deletionTimestamp: "` + ago(48*time.Hour) + `", finalizers: [longhorn.io]}, spec: {numberOfReplicas: 3, size: "10737418240"}, status: {state: deleting}}`,
			resource: "volumes",
			cluster: []string{
				`{apiVersion: longhorn.io/v1beta2, kind: Snapshot, metadata: {name: snap-7b2c, namespace: longhorn-system, uid: ls-1}, spec: {volume: pvc-4f1d, createSnapshot: true}, status: {readyToUse: true}}`,
			},
			verdict: VerdictBlocked, cause: CauseInUseBy, names: "Snapshot longhorn-system/snap-7b2c",
		},

		// Family 3: the instance that must act, where it runs.
		"3: a VolumeAttachment to a Node that was removed": {family: 3,
			thread:   "https://github.com/kubernetes/kubernetes/issues/72335",
			target:   `{apiVersion: storage.k8s.io/v1, kind: VolumeAttachment, metadata: {name: csi-ec16a736, uid: va-2, deletionTimestamp: "` + ago(4*time.Hour) + `", finalizers: [external-attacher/csi-djplugin]}, spec: {attacher: csi-djplugin, nodeName: ubuntu-node5, source: {persistentVolumeName: pvc-8a1b}}, status: {attached: true}}`,
			resource: "volumeattachments",
			cluster: []string{readyNode("ubuntu-master"),
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: csi-djplugin-controller, namespace: kube-system}, spec: {replicas: 1, selector: {matchLabels: {app: csi-djplugin}}, template: {metadata: {labels: {app: csi-djplugin}}, spec: {serviceAccountName: csi-djplugin, containers: [{name: csi-attacher, image: "quay.io/k8scsi/csi-attacher:v1.0.1", args: ["--csi-address=/csi/csi.sock"]}, {name: djplugin, image: "example.io/csi-djplugin:v1"}]}}}, status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`,
			},
			verdict: VerdictBlocked, cause: CauseVolumeDetachBlocked, names: "VolumeAttachment csi-ec16a736",
		},
		"3: a VirtualMachineInstance on a powered-off Node": {family: 3, operator: true,
			thread: "https://github.com/kubevirt/kubevirt/issues/2443",
			target: `{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, metadata: {name: vm-centos, namespace: vms, uid: vmi-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [foregroundDeleteVirtualMachine]},
  status: {phase: Running, nodeName: worker-2, conditions: [{type: Ready, status: "True", lastTransitionTime: "` + ago(5*time.Hour) + `"}]}}`,
			resource: "virtualmachineinstances",
			cluster: []string{
				`{apiVersion: v1, kind: Node, metadata: {name: worker-2}, status: {conditions: [{type: Ready, status: Unknown, reason: NodeStatusUnknown, message: "Kubelet stopped posting node status.", lastTransitionTime: "` + ago(70*time.Minute) + `"}]}}`,
				readyNode("worker-1"),
			},
			verdict: VerdictBlocked, cause: CauseRemoverPlaceUnavailable, names: "Node worker-2",
		},
		"3: a ManagedClusterAddOn whose managed cluster stopped reporting": {family: 3, operator: true,
			thread:   "https://github.com/open-cluster-management-io/enhancements/pull/56",
			target:   `{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: ManagedClusterAddOn, metadata: {name: work-manager, namespace: cluster2, uid: mca-1, deletionTimestamp: "` + ago(30*time.Minute) + `", finalizers: [cluster.open-cluster-management.io/addon-pre-delete]}, spec: {installNamespace: open-cluster-management-agent-addon}}`,
			resource: "managedclusteraddons",
			cluster: []string{
				`{apiVersion: cluster.open-cluster-management.io/v1, kind: ManagedCluster, metadata: {name: cluster2}, spec: {hubAcceptsClient: true}, status: {conditions: [{type: ManagedClusterJoined, status: "True"}, {type: ManagedClusterConditionAvailable, status: Unknown, reason: ManagedClusterLeaseUpdateStopped, message: "Registration agent stopped updating its lease.", lastTransitionTime: "` + ago(2*time.Hour) + `"}]}}`,
			},
			verdict: VerdictBlocked, cause: CauseRemoverPlaceUnavailable, names: "ManagedCluster cluster2",
		},
		"3: a Longhorn replica on a Node whose kubelet stopped renewing its Lease": {family: 3, operator: true,
			thread:   "https://github.com/longhorn/longhorn/issues/1011",
			target:   `{apiVersion: longhorn.io/v1beta2, kind: Replica, metadata: {name: pvc-91-r-1, namespace: longhorn-system, uid: lr-1, deletionTimestamp: "` + ago(26*time.Hour) + `", finalizers: [longhorn.io]}, spec: {nodeID: node-b, volumeName: pvc-91, desireState: stopped}, status: {currentState: error}}`,
			resource: "replicas",
			cluster: []string{
				readyNode("node-b"),
				`{apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: node-b, namespace: kube-node-lease}, spec: {holderIdentity: node-b, renewTime: "` + familyNow.Add(-time.Hour).Format("2006-01-02T15:04:05.000000Z07:00") + `"}}`,
			},
			verdict: VerdictBlocked, cause: CauseRemoverPlaceUnavailable, names: "Node node-b",
		},

		// Family 4: the remover identified by what runs.
		"4: a Cluster API Cluster among several binaries built as manager": {family: 4,
			thread: "https://github.com/kubernetes-sigs/cluster-api/issues/9954",
			target: `{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {name: mycluster, namespace: mycluster-gpu-dev, uid: cl-1, deletionTimestamp: "` + ago(20*time.Hour) + `", finalizers: [cluster.cluster.x-k8s.io],
  managedFields: [{manager: manager, operation: Update, apiVersion: cluster.x-k8s.io/v1beta1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {".": {}, "v:\"cluster.cluster.x-k8s.io\"": {}}}}}]},
  status: {phase: Deleting, conditions: [{type: Ready, status: "True", lastTransitionTime: "` + ago(21*time.Hour) + `"}]}}`,
			resource: "clusters",
			cluster: []string{
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: capi-controller-manager, namespace: capi-system, labels: {cluster.x-k8s.io/provider: cluster-api}}, spec: {replicas: 1, selector: {matchLabels: {control-plane: controller-manager}}, template: {metadata: {labels: {control-plane: controller-manager}}, spec: {serviceAccountName: capi-manager, containers: [{name: manager, image: registry.k8s.io/cluster-api/cluster-api-controller:v1.6.0, command: [/manager]}]}}}, status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`,
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: capv-controller-manager, namespace: capv-system, labels: {cluster.x-k8s.io/provider: infrastructure-vsphere}}, spec: {replicas: 1, selector: {matchLabels: {control-plane: controller-manager}}, template: {metadata: {labels: {control-plane: controller-manager}}, spec: {serviceAccountName: capv-manager, containers: [{name: manager, image: registry.k8s.io/cluster-api-vsphere/cluster-api-vsphere-controller:v1.9.0, command: [/manager]}]}}}, status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`,
			},
			verdict: VerdictStalled, owner: OwnerAlive,
		},
		"4: a KafkaTopic whose topic operator was uninstalled": {family: 4,
			thread: "https://github.com/strimzi/strimzi-kafka-operator/issues/11901",
			target: `{apiVersion: kafka.strimzi.io/v1beta2, kind: KafkaTopic, metadata: {name: mediator-topic, namespace: kafka-test, uid: kt-1, deletionTimestamp: "` + ago(26*24*time.Hour) + `", finalizers: [strimzi.io/topic-operator], labels: {strimzi.io/cluster: eric-oam-fw-mbkf},
  managedFields: [{manager: strimzi-topic-operator, operation: Update, apiVersion: kafka.strimzi.io/v1beta2, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {".": {}, "v:\"strimzi.io/topic-operator\"": {}}}}}]},
  spec: {partitions: 1, replicas: 1}, status: {conditions: [{type: Ready, status: "True", lastTransitionTime: "` + ago(27*24*time.Hour) + `"}]}}`,
			resource: "kafkatopics",
			verdict:  VerdictBlocked, cause: CauseOwnerGone, owner: OwnerMissing,
		},
		"4: a Rancher cluster whose remover, Rancher itself, runs": {family: 4,
			thread: "https://github.com/rancher/rancher/issues/35116",
			target: `{apiVersion: management.cattle.io/v3, kind: Cluster, metadata: {name: c-jf2t5, uid: rc-1, deletionTimestamp: "` + ago(8*time.Hour) + `", finalizers: [wrangler.cattle.io/mgmt-cluster-remove],
  managedFields: [{manager: rancher, operation: Update, apiVersion: management.cattle.io/v3, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {".": {}, "v:\"wrangler.cattle.io/mgmt-cluster-remove\"": {}}}}}]},
  spec: {displayName: old-cluster}, status: {conditions: [{type: Ready, status: "False", reason: Unavailable, lastTransitionTime: "` + ago(30*time.Hour) + `"}]}}`,
			resource: "clusters",
			cluster: []string{
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: rancher, namespace: cattle-system, labels: {app: rancher}}, spec: {replicas: 3, selector: {matchLabels: {app: rancher}}, template: {metadata: {labels: {app: rancher}}, spec: {serviceAccountName: rancher, containers: [{name: rancher, image: rancher/rancher:v2.5.9, args: [--http-listen-port=80, --https-listen-port=443]}]}}}, status: {replicas: 3, readyReplicas: 3, availableReplicas: 3}}`,
			},
			verdict: VerdictStalled, owner: OwnerAlive,
		},
		"4: a namespaced Keycloak User whose provider runs as its package's entrypoint": {family: 4,
			thread: "https://github.com/crossplane-contrib/provider-keycloak/issues/492",
			target: `{apiVersion: user.keycloak.m.crossplane.io/v1alpha1, kind: User, metadata: {name: test, namespace: test, uid: ku-1, deletionTimestamp: "` + ago(3*time.Hour) + `", finalizers: [finalizer.managedresource.crossplane.io],
  managedFields: [{manager: provider, operation: Update, apiVersion: user.keycloak.m.crossplane.io/v1alpha1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {".": {}, "v:\"finalizer.managedresource.crossplane.io\"": {}}}}}]},
  spec: {forProvider: {realmId: test, username: test}, providerConfigRef: {kind: ClusterProviderConfig, name: default}}}`,
			resource: "users",
			cluster: []string{
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: crossplane, namespace: crossplane-system, labels: {app: crossplane}}, spec: {replicas: 1, selector: {matchLabels: {app: crossplane}}, template: {metadata: {labels: {app: crossplane}}, spec: {serviceAccountName: crossplane, containers: [{name: crossplane, image: xpkg.crossplane.io/crossplane/crossplane:v2.1.3, args: [core, start]}]}}}, status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`,
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: crossplane-contrib-provider-keycloak-4d1e2f, namespace: crossplane-system, labels: {pkg.crossplane.io/provider: provider-keycloak}}, spec: {replicas: 1, selector: {matchLabels: {pkg.crossplane.io/provider: provider-keycloak}}, template: {metadata: {labels: {pkg.crossplane.io/provider: provider-keycloak}}, spec: {serviceAccountName: crossplane-contrib-provider-keycloak-4d1e2f, containers: [{name: package-runtime, image: xpkg.upbound.io/crossplane-contrib/provider-keycloak:v2.14.0, command: [provider]}]}}}, status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`,
			},
			verdict: VerdictStalled, owner: OwnerAlive,
		},

		// Family 5: a helper's failure followed to its cause.
		"5: a final-backup Job that fails on its S3 credentials": {family: 5, operator: true,
			thread: "https://github.com/paperclipinc/hermes-operator/issues/93",
			target: `{apiVersion: hermes.agent/v1alpha1, kind: HermesInstance, metadata: {name: backup-enabled, namespace: conformance, uid: hi-1, deletionTimestamp: "` + ago(2*time.Hour) + `", finalizers: [hermes.agent/backup-on-delete]}, spec: {backup: {onDelete: true, s3: {bucket: placeholder}}},
  status: {conditions: [{type: Ready, status: "False", reason: FinalBackupFailed, message: "final backup job backup-enabled-final-backup failed; retrying", lastTransitionTime: "` + ago(2*time.Hour) + `"}]}}`,
			resource: "hermesinstances",
			cluster: []string{
				`{apiVersion: batch/v1, kind: Job, metadata: {name: backup-enabled-final-backup, namespace: conformance}, spec: {template: {spec: {restartPolicy: Never, containers: [{name: snapshot, image: hermes/backup:v1}]}}}, status: {failed: 4, conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, message: "Job has reached the specified backoff limit"}]}}`,
				`{apiVersion: v1, kind: Pod, metadata: {name: backup-enabled-final-backup-x7k2p, namespace: conformance, labels: {batch.kubernetes.io/job-name: backup-enabled-final-backup}}, spec: {containers: [{name: snapshot, image: hermes/backup:v1}]},
  status: {phase: Failed, containerStatuses: [{name: snapshot, state: {terminated: {exitCode: 1, reason: Error, message: "upload: InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records."}}}]}}`,
			},
			verdict: VerdictBlocked, cause: CauseHelperFailed, names: "Job conformance/backup-enabled-final-backup",
		},
		"5: a StorageOS cleanup Job forbidden to delete what it cleans": {family: 5, operator: true,
			thread: "https://github.com/storageos/charts/pull/63",
			target: `{apiVersion: storageos.com/v1, kind: StorageOSCluster, metadata: {name: storageos, namespace: storageos-operator, uid: so-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [finalizer.storageos.com]}, spec: {secretRefName: storageos-api, secretRefNamespace: storageos-operator},
  status: {conditions: [{type: Ready, status: "False", reason: CleanupFailed, message: "cleanup job storageos-csi-helper-cleanup failed", lastTransitionTime: "` + ago(time.Hour) + `"}]}}`,
			resource: "storageosclusters",
			cluster: []string{
				`{apiVersion: v1, kind: Secret, metadata: {name: storageos-api, namespace: storageos-operator}}`,
				`{apiVersion: batch/v1, kind: Job, metadata: {name: storageos-csi-helper-cleanup, namespace: storageos-operator}, spec: {template: {spec: {serviceAccountName: storageos-cleanup-sa, restartPolicy: Never, containers: [{name: cleanup, image: storageos/cleanup:v1}]}}}, status: {failed: 1, conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded}]}}`,
				`{apiVersion: v1, kind: Pod, metadata: {name: storageos-csi-helper-cleanup-ssc8q, namespace: storageos-operator, labels: {job-name: storageos-csi-helper-cleanup}}, spec: {serviceAccountName: storageos-cleanup-sa, containers: [{name: cleanup, image: storageos/cleanup:v1}]},
  status: {phase: Failed, containerStatuses: [{name: cleanup, state: {terminated: {exitCode: 1, reason: Error, message: "Error from server (Forbidden): deployments.extensions \"storageos-csi-helper\" is forbidden: User \"system:serviceaccount:storageos-operator:storageos-cleanup-sa\" cannot delete resource \"deployments\" in API group \"extensions\" in the namespace \"kube-system\""}}}]}}`,
			},
			deny:    []string{"system:serviceaccount:storageos-operator:storageos-cleanup-sa"},
			verdict: VerdictBlocked, cause: CauseHelperFailed, names: "Job storageos-operator/storageos-csi-helper-cleanup",
		},
		"5: a NebulaBackup whose cleanup Job's pod cannot pull its image": {family: 5, operator: true,
			thread: "https://github.com/vesoft-inc/nebula-operator/issues/458",
			target: `{apiVersion: apps.nebula-graph.io/v1alpha1, kind: NebulaBackup, metadata: {name: nb20240229f300-4, namespace: harris, uid: nb-1, deletionTimestamp: "` + ago(3*time.Hour) + `", finalizers: [apps.nebula-graph.io/backup-cleanup]}, spec: {cleanBackupData: true, config: {clusterName: nebula, s3: {bucket: nebula-br-test2, region: us-west-2, secretName: aws-secret-ql3}}},
  status: {conditions: [{type: Ready, status: "False", reason: CleanupRunning, message: "waiting for job nb20240229f300-4-cleanup to complete", lastTransitionTime: "` + ago(3*time.Hour) + `"}]}}`,
			resource: "nebulabackups",
			cluster: []string{
				`{apiVersion: v1, kind: Secret, metadata: {name: aws-secret-ql3, namespace: harris}}`,
				`{apiVersion: batch/v1, kind: Job, metadata: {name: nb20240229f300-4-cleanup, namespace: harris}, spec: {template: {spec: {restartPolicy: Never, containers: [{name: br, image: vesoft/br-ent:v3.7.0}]}}}, status: {active: 1}}`,
				`{apiVersion: v1, kind: Pod, metadata: {name: nb20240229f300-4-cleanup-9fz2d, namespace: harris, labels: {job-name: nb20240229f300-4-cleanup}}, spec: {containers: [{name: br, image: vesoft/br-ent:v3.7.0}]},
  status: {phase: Pending, containerStatuses: [{name: br, state: {waiting: {reason: ImagePullBackOff, message: "Back-off pulling image \"vesoft/br-ent:v3.7.0\""}}}]}}`,
			},
			verdict: VerdictBlocked, cause: CauseHelperFailed, names: "Job harris/nb20240229f300-4-cleanup",
		},
		"5: a claim held by its importer pod, crash-looping on a URL that answers 404": {family: 5,
			thread: "https://github.com/kubevirt/containerized-data-importer/issues/649",
			target: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: disk-1, namespace: vm, uid: cpvc-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [kubernetes.io/pvc-protection], annotations: {cdi.kubevirt.io/storage.import.endpoint: "http://images.example/disk.img"}},
  spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}, volumeName: pv-disk-1}, status: {phase: Bound}}`,
			resource: "persistentvolumeclaims",
			cluster: []string{
				readyNode("n1"),
				`{apiVersion: v1, kind: Pod, metadata: {name: importer-disk-1, namespace: vm, uid: ip-1}, spec: {nodeName: n1, restartPolicy: OnFailure, containers: [{name: importer, image: quay.io/kubevirt/cdi-importer:v1.5.0}], volumes: [{name: cdi-data-vol, persistentVolumeClaim: {claimName: disk-1}}]},
  status: {phase: Running, containerStatuses: [{name: importer, restartCount: 27, state: {waiting: {reason: CrashLoopBackOff, message: "back-off 5m0s restarting failed container"}}, lastState: {terminated: {exitCode: 1, reason: Error, message: "Unable to connect to http data source: expected status code 200, got 404. Status: 404 Not Found"}}}]}}`,
			},
			verdict: VerdictBlocked, cause: CausePVCInUse, names: "Pod vm/importer-disk-1", says: "it keeps failing (Pod vm/importer-disk-1: CrashLoopBackOff",
		},
		// Family 6: what the owner needs is gone.
		"6: a HelmRelease whose impersonated ServiceAccount went with its namespace": {family: 6, operator: true,
			thread:   "https://github.com/fluxcd/helm-controller/issues/270",
			target:   `{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, metadata: {name: nginx-hello, namespace: gatekeeper-test-296eaaf2, uid: hr-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [finalizers.fluxcd.io]}, spec: {serviceAccountName: default, chart: {spec: {chart: nginx}}}}`,
			resource: "helmreleases",
			cluster: []string{
				`{apiVersion: v1, kind: Namespace, metadata: {name: gatekeeper-test-296eaaf2, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [kubernetes]}, spec: {finalizers: [kubernetes]}, status: {phase: Terminating}}`,
			},
			verdict: VerdictBlocked, cause: CauseNeedGoneWithNamespace, names: "ServiceAccount gatekeeper-test-296eaaf2/default",
		},
		"6: a kapp-controller App whose ServiceAccount was never created": {family: 6, operator: true,
			thread:   "https://github.com/carvel-dev/kapp-controller/issues/114",
			target:   `{apiVersion: kappctrl.k14s.io/v1alpha1, kind: App, metadata: {name: simple-app, namespace: default, uid: ka-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [finalizers.kapp-ctrl.k14s.io/delete]}, spec: {serviceAccountName: default-ns-sa, fetch: [{git: {url: "https://github.com/k14s/k8s-simple-app-example"}}]}}`,
			resource: "apps",
			cluster:  []string{`{apiVersion: v1, kind: Namespace, metadata: {name: default}}`},
			verdict:  VerdictBlocked, cause: CauseNeedGone, names: "ServiceAccount default/default-ns-sa",
		},
		"6: a namespaced ProviderConfig whose credentials Secret went first": {family: 6, operator: true,
			thread:   "https://github.com/crossplane/crossplane/issues/7801",
			target:   `{apiVersion: aws.m.upbound.io/v1beta1, kind: ProviderConfig, metadata: {name: default, namespace: team-a, uid: pc-7, deletionTimestamp: "` + ago(90*time.Minute) + `", finalizers: [in-use.crossplane.io]}, spec: {credentials: {source: Secret, secretRef: {name: aws-creds, namespace: team-a, key: credentials}}}}`,
			resource: "providerconfigs",
			cluster: []string{
				`{apiVersion: v1, kind: Namespace, metadata: {name: team-a, deletionTimestamp: "` + ago(90*time.Minute) + `", finalizers: [kubernetes]}, spec: {finalizers: [kubernetes]}, status: {phase: Terminating}}`,
			},
			verdict: VerdictBlocked, cause: CauseNeedGoneWithNamespace, names: "Secret team-a/aws-creds",
		},
		"6: a Terraform object whose runner ServiceAccount does not exist": {family: 6, operator: true,
			thread:   "https://github.com/flux-iac/tofu-controller/issues/300",
			target:   `{apiVersion: infra.contrib.fluxcd.io/v1alpha2, kind: Terraform, metadata: {name: vpc, namespace: default, uid: tf-1, deletionTimestamp: "` + ago(5*time.Hour) + `", finalizers: [finalizers.tf.contrib.fluxcd.io]}, spec: {interval: 1m, path: ./vpc, serviceAccountName: tf-runner, sourceRef: {kind: GitRepository, name: infra}}}`,
			resource: "terraforms",
			cluster:  []string{`{apiVersion: v1, kind: Namespace, metadata: {name: default}}`},
			verdict:  VerdictBlocked, cause: CauseNeedGone, names: "ServiceAccount default/tf-runner",
		},

		// Family 7: progress judged from evidence. Progressing normally:
		"7 progressing: a RabbitMQ pod draining inside its long grace period": {family: 7,
			thread: "https://github.com/rabbitmq/cluster-operator/issues/53",
			target: `{apiVersion: v1, kind: Pod, metadata: {name: rabbit-server-0, namespace: rabbit, uid: rp-1, deletionTimestamp: "` + in(6*time.Hour) + `", deletionGracePeriodSeconds: 604800}, spec: {nodeName: n1, terminationGracePeriodSeconds: 604800, containers: [{name: rabbitmq, image: rabbitmq:3.8}]},
  status: {phase: Running}}`,
			resource: "pods",
			cluster:  []string{readyNode("n1")},
			verdict:  VerdictProgressing,
		},
		"7 progressing: a final backup retried by its handler, next attempt in 20s": {family: 7, operator: true,
			thread:   "https://github.com/paperclipinc/hermes-operator/pull/94",
			target:   `{apiVersion: hermes.agent/v1alpha1, kind: HermesInstance, metadata: {name: agent-1, namespace: prod, uid: hi-2, deletionTimestamp: "` + ago(5*time.Minute) + `", finalizers: [hermes.agent/backup-on-delete], annotations: {` + progress("hermes.agent/backup-on-delete", familyNow.Add(20*time.Second)) + `}}, spec: {backup: {onDelete: true}}}`,
			resource: "hermesinstances",
			verdict:  VerdictProgressing,
		},
		"7 progressing: KubeVirt's CR a minute into its deletion, its conditions just changed": {family: 7, operator: true,
			thread: "https://github.com/kubevirt/kubevirt/issues/1491",
			target: `{apiVersion: kubevirt.io/v1, kind: KubeVirt, metadata: {name: kubevirt, namespace: kubevirt, uid: kv-1, deletionTimestamp: "` + ago(time.Minute) + `", finalizers: [foregroundDeleteKubeVirt]},
  status: {phase: Deleting, conditions: [{type: Available, status: "False", reason: DeletionInProgress, message: "Deletion was triggered", lastTransitionTime: "` + ago(40*time.Second) + `"}]}}`,
			resource: "kubevirts",
			verdict:  VerdictProgressing,
		},
		// Looks progressing, is not:
		"7 looks progressing: KubeVirt's CR five days on, its Progressing condition unchanged": {family: 7, operator: true,
			thread: "https://github.com/kubevirt/kubevirt/issues/1491",
			target: `{apiVersion: kubevirt.io/v1, kind: KubeVirt, metadata: {name: kubevirt, namespace: kubevirt, uid: kv-2, deletionTimestamp: "` + ago(5*24*time.Hour) + `", finalizers: [foregroundDeleteKubeVirt]},
  status: {phase: Deleting, conditions: [{type: Progressing, status: "False", reason: DeletionInProgress, message: "Deletion was triggered", lastTransitionTime: "` + ago(5*24*time.Hour) + `"}]}}`,
			resource: "kubevirts",
			verdict:  VerdictStalled,
		},
		"7 looks progressing: the same Normal Event said 78154 times over nine days": {family: 7, operator: true,
			thread:   "https://github.com/kubermatic/kubermatic/issues/15997",
			target:   `{apiVersion: kubermatic.k8c.io/v1, kind: Cluster, metadata: {name: xyz12, uid: kc-1, deletionTimestamp: "` + ago(9*24*time.Hour) + `", finalizers: [kubermatic.k8c.io/cleanup-namespace]}, spec: {humanReadableName: uc}}`,
			resource: "clusters",
			cluster: []string{
				`{apiVersion: v1, kind: Event, metadata: {name: xyz12.1, namespace: default}, type: Normal, reason: ClusterNamespaceCleanup, message: "Cluster namespace is still terminating, some resources might be blocked by finalizers.", count: 78154,
  firstTimestamp: "` + ago(9*24*time.Hour) + `", lastTimestamp: "` + ago(time.Minute) + `", source: {component: kkp-kubernetes-controller}, involvedObject: {kind: Cluster, name: xyz12, uid: kc-1}}`,
			},
			verdict: VerdictStalled,
		},
		"7 looks progressing: a pod past its grace period on a Node that is gone dark": {family: 7,
			thread:   "https://github.com/kubernetes/kubernetes/issues/92512",
			target:   `{apiVersion: v1, kind: Pod, metadata: {name: web-0, namespace: shop, uid: wp-1, deletionTimestamp: "` + ago(2*time.Hour) + `", deletionGracePeriodSeconds: 30}, spec: {nodeName: a9f43f59, containers: [{name: web, image: web}]}, status: {phase: Running}}`,
			resource: "pods",
			cluster: []string{
				`{apiVersion: v1, kind: Node, metadata: {name: a9f43f59}, status: {conditions: [{type: Ready, status: Unknown, reason: NodeStatusUnknown, message: "Kubelet stopped posting node status.", lastTransitionTime: "` + ago(3*time.Hour) + `"}]}}`,
			},
			verdict: VerdictBlocked, cause: CausePodOnNotReadyNode, names: "Pod shop/web-0",
		},
	}
}

// threadExplainer is an Explainer over kubefake holding docs, whose
// SubjectAccessReviews deny the users in deny.
func threadExplainer(t *testing.T, deny []string, docs ...string) *Explainer {
	t.Helper()
	objs := make([]runtime.Object, 0, len(docs))
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatalf("fixture: %v\n%s", err, d)
		}
		objs = append(objs, u)
	}
	c, f := kubefake.New(t, objs...)
	f.Kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		allowed := true
		for _, d := range deny {
			allowed = allowed && sar.Spec.User != d
		}
		return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: allowed}}, nil
	})
	return NewExplainer(c, familyNow)
}

// explainThread runs explain's whole walk on tc.
func explainThread(t *testing.T, tc threadScenario) *Report {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(tc.target), &u.Object); err != nil {
		t.Fatalf("target: %v", err)
	}
	docs := append([]string{}, tc.cluster...)
	if tc.operator {
		fin := u.GetFinalizers()[0]
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: u.GetAPIVersion(), FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{".":{},"v:\"` + fin + `\"":{}}}}`)}})
		docs = append(docs, runningOperator)
	}
	target, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, string(target))
	e := threadExplainer(t, tc.deny, docs...)
	gvk := u.GroupVersionKind()
	rep, err := e.ExplainObject(context.Background(), Target{GVR: gvk.GroupVersion().WithResource(tc.resource), GVK: gvk, Namespaced: u.GetNamespace() != "",
		Namespace: u.GetNamespace(), Name: u.GetName()}, u)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// judgeThread says what tc's report gets wrong ("" when nothing).
func judgeThread(tc threadScenario, rep *Report) string {
	var wrong []string
	if rep.Verdict != tc.verdict {
		wrong = append(wrong, fmt.Sprintf("verdict %s, want %s", rep.Verdict, tc.verdict))
	}
	if tc.cause != "" || tc.names != "" {
		got := "none"
		if len(rep.RootBlockers) > 0 {
			r := rep.RootBlockers[0]
			got = r.Cause
			if r.Object != nil {
				got += " " + r.Object.String()
			}
		}
		want := strings.TrimSpace(tc.cause + " " + tc.names)
		if !strings.HasPrefix(got, tc.cause) || !strings.HasSuffix(got, tc.names) {
			wrong = append(wrong, fmt.Sprintf("first root blocker %q, want %q", got, want))
		}
	}
	if tc.says != "" && (len(rep.RootBlockers) == 0 || !strings.Contains(rep.RootBlockers[0].Message, tc.says)) {
		wrong = append(wrong, fmt.Sprintf("the first root blocker does not say %q", tc.says))
	}
	if tc.owner != "" {
		state := "none"
		WalkFindings(rep.Findings, func(f *Finding) {
			if state == "none" && f.Finalizer != "" && f.Owner != nil {
				state = f.Owner.State
			}
		})
		if state != tc.owner {
			wrong = append(wrong, fmt.Sprintf("owner %s, want %s", state, tc.owner))
		}
	}
	return strings.Join(wrong, "; ")
}

// TestThreadScenarios: issue 26's new scenarios through explain's whole
// walk on client-go's fakes; the share each family gets right is logged.
func TestThreadScenarios(t *testing.T) {
	scenarios := threadScenarios()
	names := make([]string, 0, len(scenarios))
	for name := range scenarios {
		names = append(names, name)
	}
	sort.Strings(names)
	right := map[int]int{}
	total := map[int]int{}
	for _, name := range names {
		tc := scenarios[name]
		total[tc.family]++
		t.Run(name, func(t *testing.T) {
			rep := explainThread(t, tc)
			if wrong := judgeThread(tc, rep); wrong != "" {
				var b strings.Builder
				RenderReport(&b, rep, Palette{})
				t.Errorf("%s: %s\n%s", tc.thread, wrong, b.String())
				return
			}
			right[tc.family]++
		})
	}
	sum, all := 0, 0
	for f := 1; f <= 7; f++ {
		t.Logf("family %d: %d of %d", f, right[f], total[f])
		sum, all = sum+right[f], all+total[f]
	}
	t.Logf("all: %d of %d", sum, all)
}
