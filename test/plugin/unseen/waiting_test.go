/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// Family 1 of issue 20: a live owner waiting on something else. In each
// scenario the finalizer's owner runs (its workload has ready replicas,
// its ServiceAccount may write the object), and its teardown waits on
// something the cluster records elsewhere: an object the target names, a
// Job the API server refused, a leader lock held by a pod that stopped.
// Explain must name that as the first root blocker, with its evidence,
// instead of "wait" or an RBAC denial found on the way.

// Argo CD deletes what an Application manages and keeps
// resources-finalizer.argocd.argoproj.io until all of it is gone; "some
// components get stuck in terminating/deletion state and the whole
// application hangs with the deletion status. Some specific K8s objects
// that have inconsistent behaviour upon deletion are PVCs"
// (https://github.com/argoproj/argo-cd/issues/3041; the blocking itself:
// https://github.com/argoproj/argo-cd/issues/636). Here the app's
// status.resources still lists a PVC that a pod still mounts: the root is
// the PVC's protection, not the application controller.
func TestWaitingGitOpsAppHoldsChild(t *testing.T) {
	needCluster(t)
	const group, fin = "argoproj.io", "resources-finalizer.argocd.argoproj.io"
	ensureCRD(t, group, "Application", "applications", "v1alpha1")
	argo := plugintest.NewNamespace(t, cs, "argocd")
	statefulOperator(t, argo, "argocd-application-controller", "argocd-application-controller", "quay.io/argoproj/argocd:v1.4.2", 1)
	grant(t, argo, "argocd-application-controller", "", group, "applications")
	shop := plugintest.NewNamespace(t, cs, "shop")

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-postgres-0", Namespace: shop, Finalizers: []string{"kubernetes.io/pvc-protection"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(shop).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "postgres-0", Namespace: shop},
		Spec: corev1.PodSpec{NodeName: "worker-1", Containers: []corev1.Container{{Name: "postgres", Image: "postgres:16"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-postgres-0"}}}}}}
	if _, err := cs.CoreV1().Pods(shop).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumeClaims(shop).Delete(t.Context(), "data-postgres-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().PersistentVolumeClaims(shop).Patch(context.Background(), "data-postgres-0", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	terminatingObject(t, group, "v1alpha1", "Application", "applications", argo, "shop", "argocd-server", []string{fin},
		map[string]any{"destination": map[string]any{"namespace": shop, "server": "https://kubernetes.default.svc"}},
		map[string]any{"resources": []any{
			map[string]any{"group": "apps", "version": "v1", "kind": "StatefulSet", "namespace": shop, "name": "postgres", "status": "Synced"},
			map[string]any{"version": "v1", "kind": "PersistentVolumeClaim", "namespace": shop, "name": "data-postgres-0", "status": "Synced"},
			map[string]any{"version": "v1", "kind": "Service", "namespace": shop, "name": "postgres", "status": "Synced"},
		}})

	rep := explain(t, "applications."+group+"/shop", "-n", argo)
	if !rep.Blocked || len(rep.RootBlockers) == 0 {
		t.Fatalf("not blocked; findings:\n%s", dump(rep.Findings))
	}
	first := rep.RootBlockers[0]
	if first.Cause != "PVCInUse" || first.Object == nil || first.Object.Kind != "Pod" || first.Object.Name != "postgres-0" {
		t.Fatalf("first root blocker %s on %s, want PVCInUse on the pod that mounts the PVC the app still lists; roots:\n%s", first.Cause, dump(first.Object), dump(rep.RootBlockers))
	}
	mustContain(t, "root remedy", first.Remedy, "kubectl delete pod postgres-0")
	f := find(rep, fin)
	if f == nil || f.Cause != "OwnerWaitingOn" || f.Owner == nil || f.Owner.State != "alive" {
		t.Fatalf("finding for %s: want OwnerWaitingOn with the application controller alive:\n%s", fin, dump(f))
	}
	mustContain(t, "message", f.Message, "PersistentVolumeClaim "+shop+"/data-postgres-0")
	mustNotContain(t, "message", f.Message, "StatefulSet") // gone already: nothing to wait on
}

// Cluster API deletes a Cluster's infrastructure first and keeps
// cluster.cluster.x-k8s.io until it is gone; the infrastructure provider
// fails against the cloud API and the Cluster sits in Deleting
// (https://github.com/kubernetes-sigs/cluster-api/issues/4685: "the
// deletion process also meets the Authentication failed error";
// https://github.com/kubernetes-sigs/cluster-api-provider-aws/issues/2227:
// "error deleting security groups ... InvalidParameterValue: vpc-id").
// capi-controller-manager runs and is right to wait: the root is the
// AWSCluster its spec.infrastructureRef names, with CAPA's own words.
func TestWaitingClusterAPIInfrastructure(t *testing.T) {
	needCluster(t)
	const capiGroup, capaGroup = "cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io"
	ensureCRD(t, capiGroup, "Cluster", "clusters", "v1beta1")
	ensureCRD(t, capaGroup, "AWSCluster", "awsclusters", "v1beta2")
	capi := plugintest.NewNamespace(t, cs, "capi-system")
	operator(t, capi, "capi-controller-manager", "capi-manager", []string{"/manager"}, "registry.k8s.io/cluster-api/cluster-api-controller:v1.7.2", 1)
	grant(t, capi, "capi-manager", "", capiGroup, "clusters")
	capa := plugintest.NewNamespace(t, cs, "capa-system")
	operator(t, capa, "capa-controller-manager", "capa-controller-manager", []string{"/manager"}, "registry.k8s.io/cluster-api-aws/cluster-api-aws-controller:v2.5.0", 1)
	grant(t, capa, "capa-controller-manager", "", capaGroup, "awsclusters")
	ns := plugintest.NewNamespace(t, cs, "clusters")

	const failure = "error deleting security groups for AWSCluster workload-1: failed to describe cluster-owned security groups in vpc \"\": InvalidParameterValue: vpc-id"
	terminatingObject(t, capaGroup, "v1beta2", "AWSCluster", "awsclusters", ns, "workload-1", "manager", []string{"awscluster.infrastructure.cluster.x-k8s.io"},
		map[string]any{"region": "us-east-2"},
		map[string]any{"ready": false, "conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "DeletionFailed", "message": failure, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)},
		}})
	terminatingObject(t, capiGroup, "v1beta1", "Cluster", "clusters", ns, "workload-1", "manager", []string{"cluster.cluster.x-k8s.io"},
		map[string]any{"infrastructureRef": map[string]any{"apiVersion": capaGroup + "/v1beta2", "kind": "AWSCluster", "name": "workload-1", "namespace": ns}},
		map[string]any{"phase": "Deleting", "conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "Deleting", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)},
		}})

	rep := explain(t, "clusters."+capiGroup+"/workload-1", "-n", ns)
	if !rep.Blocked || len(rep.RootBlockers) == 0 {
		t.Fatalf("not blocked; findings:\n%s", dump(rep.Findings))
	}
	first := rep.RootBlockers[0]
	if first.Object == nil || first.Object.Kind != "AWSCluster" || first.Cause != "OwnerReportsFailure" {
		t.Fatalf("first root blocker %s on %s, want OwnerReportsFailure on the AWSCluster; roots:\n%s", first.Cause, dump(first.Object), dump(rep.RootBlockers))
	}
	mustContain(t, "root message", first.Message, "InvalidParameterValue: vpc-id")
	f := find(rep, "cluster.cluster.x-k8s.io")
	if f == nil || f.Cause != "OwnerWaitingOn" || f.Owner == nil || f.Owner.State != "alive" {
		t.Fatalf("Cluster's finding: want OwnerWaitingOn with Cluster API alive:\n%s", dump(f))
	}
	mustContain(t, "message", f.Message, "AWSCluster "+ns+"/workload-1")
	// The tree a person reads says the same.
	out := text("clusters."+capiGroup+"/workload-1", "-n", ns).Out
	mustContain(t, "explain", out, "OwnerWaitingOn", "WaitsOnObject", "OwnerReportsFailure", "InvalidParameterValue: vpc-id")
}

// KubeRay's Redis cleanup: deleting the namespace deletes the RayCluster,
// and the operator then tries to create its cleanup Job there: "jobs.batch
// "ray-cluster-redis-cleanup" is forbidden: unable to create new content in
// namespace ray-shared-ml because it is being terminated"
// (https://github.com/ray-project/kuberay/issues/3388). The operator runs,
// and will never finish: the namespace waits on the RayCluster, and the
// RayCluster on a Job the namespace refuses. The operator's ServiceAccount
// here also lacks the right to write RayClusters (a denial found on the
// way): before, explain blamed that alone; it is reported beside the
// root cause, not instead of it.
func TestWaitingCleanupJobRefusedInTerminatingNamespace(t *testing.T) {
	needCluster(t)
	const group, fin = "ray.io", "ray.io/gcs-ft-redis-cleanup-finalizer"
	ensureCRD(t, group, "RayCluster", "rayclusters", "v1")
	rs := plugintest.NewNamespace(t, cs, "ray-system")
	operator(t, rs, "kuberay-operator", "kuberay-operator", []string{"/manager"}, "quay.io/kuberay/operator:v1.3.0", 1)
	ns := plugintest.NewNamespace(t, cs, "ray-shared-ml")
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "rayclusters"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "RayCluster",
		"metadata": map[string]any{"name": "ray-cluster", "namespace": ns, "finalizers": []any{fin},
			"annotations": map[string]any{"ray.io/ft-enabled": "true"}},
		"spec": map[string]any{"gcsFaultToleranceOptions": map[string]any{"redisAddress": "redis:6379"}}}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{FieldManager: "kuberay-operator"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), "ray-cluster", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := cs.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller finds the RayCluster only once its discovery
	// has the CRD, created just before; on a loaded machine that takes more
	// than its first retries (a CI run waited over 30 s).
	testenv.Eventually(t, 120*time.Second, "RayCluster deleted by the namespace controller", func(ctx context.Context) (bool, error) {
		cur, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "ray-cluster", metav1.GetOptions{})
		return err == nil && cur.GetDeletionTimestamp() != nil, err
	})
	// The namespace refuses the operator's Events too; KubeRay writes the
	// reconcile error into the RayCluster's status.reason.
	refused := `jobs.batch "ray-cluster-redis-cleanup" is forbidden: unable to create new content in namespace ` + ns + ` because it is being terminated`
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"state": "ready", "reason": refused}})
	if _, err := dyn.Resource(gvr).Namespace(ns).Patch(t.Context(), "ray-cluster", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kuberay-operator"}); err != nil {
		t.Fatal(err)
	}

	rep := explain(t, "rayclusters."+group+"/ray-cluster", "-n", ns)
	if !rep.Blocked || len(rep.RootBlockers) == 0 {
		t.Fatalf("not blocked; findings:\n%s", dump(rep.Findings))
	}
	first := rep.RootBlockers[0]
	if first.Cause != "CleanupJobRefused" || first.Object == nil || first.Object.Kind != "Namespace" || first.Object.Name != ns {
		t.Fatalf("first root blocker %s on %s, want CleanupJobRefused naming namespace %s; roots:\n%s", first.Cause, dump(first.Object), ns, dump(rep.RootBlockers))
	}
	mustContain(t, "root message", first.Message, `Job ray-cluster-redis-cleanup`, "is being deleted", "deadlock")
	mustContain(t, "root remedy", first.Remedy, "by hand")
	rbac := root(t, rep, "OwnerLacksRBAC") // beside, not instead
	mustContain(t, "RBAC message", rbac.Message, "beside what it waits on")
}

// A cleanup Job refused by a ResourceQuota: "When quota for # of jobs is
// reached ... The only way to progress is to remove enough Jobs to make
// room for a new Job in namespace quota"
// (https://github.com/kubernetes/kubernetes/issues/119775; the refusal as
// a controller's Warning Event: https://github.com/eggpi/citationhunt/issues/186).
// Here the same refusal meets an operator's cleanup Job on deletion (Rook's
// cluster cleanup Jobs, issue 20's "Jobs refused by quota"): the operator
// runs and reports it, and waiting does not help.
func TestWaitingCleanupJobOverQuota(t *testing.T) {
	needCluster(t)
	const group, fin = "ceph.rook.io", "cephcluster.ceph.rook.io"
	ensureCRD(t, group, "CephCluster", "cephclusters", "v1")
	rook := plugintest.NewNamespace(t, cs, "rook-ceph")
	operator(t, rook, "rook-ceph-operator", "rook-ceph-system", []string{"rook", "ceph", "operator"}, "docker.io/rook/ceph:v1.14.0", 1)
	grant(t, rook, "rook-ceph-system", "", group, "cephclusters")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "jobs", Namespace: rook},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("2")}}}
	got, err := cs.CoreV1().ResourceQuotas(rook).Create(t.Context(), quota, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No quota controller runs here: the status is what it would write.
	got.Status = corev1.ResourceQuotaStatus{Hard: got.Spec.Hard, Used: corev1.ResourceList{"count/jobs.batch": resource.MustParse("2")}}
	if _, err := cs.CoreV1().ResourceQuotas(rook).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	terminatingObject(t, group, "v1", "CephCluster", "cephclusters", rook, "rook-ceph", "rook", []string{fin},
		map[string]any{"cleanupPolicy": map[string]any{"confirmation": "yes-really-destroy-data"}}, map[string]any{"phase": "Deleting"})
	cluster, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "cephclusters"}).Namespace(rook).Get(t.Context(), "rook-ceph", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "rook-ceph.cleanup", Namespace: rook},
		InvolvedObject: corev1.ObjectReference{APIVersion: group + "/v1", Kind: "CephCluster", Namespace: rook, Name: "rook-ceph", UID: cluster.GetUID()},
		Type:           corev1.EventTypeWarning, Reason: "ReconcileFailed", Source: corev1.EventSource{Component: "rook-ceph-operator"},
		Message:        `failed to start cleanup: jobs.batch "cluster-cleanup-job-worker-1" is forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=2, limited: count/jobs.batch=2`,
		FirstTimestamp: now, LastTimestamp: now, Count: 12}
	if _, err := cs.CoreV1().Events(rook).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explain(t, "cephclusters."+group+"/rook-ceph", "-n", rook)
	if !rep.Blocked || len(rep.RootBlockers) == 0 {
		t.Fatalf("not blocked; findings:\n%s", dump(rep.Findings))
	}
	first := rep.RootBlockers[0]
	if first.Cause != "CleanupJobRefused" || first.Object == nil || first.Object.Kind != "ResourceQuota" || first.Object.Name != "jobs" {
		t.Fatalf("first root blocker %s on %s, want CleanupJobRefused naming ResourceQuota jobs; roots:\n%s", first.Cause, dump(first.Object), dump(rep.RootBlockers))
	}
	mustContain(t, "root message", first.Message, "cluster-cleanup-job-worker-1", "full for count/jobs.batch", "count/jobs.batch 2 of 2")
	mustContain(t, "root remedy", first.Remedy, "delete finished Jobs", "raise it")
}

// ensureCRD is newCRD, once per control plane: scenarios of other files
// may have created it.
func ensureCRD(t *testing.T, group, kind, plural string, versions ...string) {
	t.Helper()
	ax := apiextensionsclient.NewForConfigOrDie(restConfig)
	_, err := ax.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), plural+"."+group, metav1.GetOptions{})
	if err == nil {
		return
	}
	if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	newCRD(t, group, kind, plural, versions...)
}

// terminatingObject creates an object with spec and status (the CRDs here
// have no status subresource) and finalizers, written by manager, and
// deletes it: it stays Terminating.
func terminatingObject(t *testing.T, group, version, kind, plural, ns, name, manager string, finalizers []string, spec, status map[string]any) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	fins := make([]any, len(finalizers))
	for i, f := range finalizers {
		fins[i] = f
	}
	obj := map[string]any{"apiVersion": group + "/" + version, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "finalizers": fins}, "spec": spec}
	if status != nil {
		obj["status"] = status
	}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(gvr).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
}
