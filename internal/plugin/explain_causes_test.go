/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// runningDeployment creates a Deployment and marks it available by hand (no
// deployment controller runs here), so explain judges its owner alive.
func runningDeployment(t *testing.T, ns, name, serviceAccount string, containers ...corev1.Container) {
	t.Helper()
	dep := deployment(ns, name, 1)
	dep.Spec.Template.Spec.ServiceAccountName = serviceAccount
	if len(containers) > 0 {
		dep.Spec.Template.Spec.Containers = containers
	}
	got, err := cs.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Deployment %s/%s: %v", ns, name, err)
	}
	got.Status = appsv1.DeploymentStatus{ObservedGeneration: got.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("marking Deployment %s/%s available: %v", ns, name, err)
	}
}

// B4: the finalizer's owner runs, but its ServiceAccount may not write the
// object, so it can never remove the finalizer. Granting the right turns the
// finding into cleanup in progress.
func TestExplainOwnerLacksRBAC(t *testing.T) {
	needCluster(t)
	ops := newNamespace(t)
	runningDeployment(t, ops, "gadget-operator", "gadget-operator")
	ns := newNamespace(t)
	configMap(t, ns, "gadget", "gadget-operator", []string{"gadgets.b4.teardown.test/cleanup"})
	deleteConfigMap(t, ns, "gadget", "")

	log := &requestLog{}
	r := cli(t, "", log, "explain", "configmap/gadget", "-n", ns, "-o", "json")
	if r.code != ExitBlocked {
		t.Fatalf("explain: exit %d, want %d\n%s%s", r.code, ExitBlocked, r.out, r.err)
	}
	onlyReads(t, log)
	rep := &diagnose.Report{}
	if err := json.Unmarshal([]byte(r.out), rep); err != nil {
		t.Fatal(err)
	}
	f := plugintest.Find(rep, diagnose.CauseOwnerLacksRBAC, "gadget")
	if f == nil || f.Catalog != "B4" || f.Severity != diagnose.SeverityBlocker {
		t.Fatalf("no OwnerLacksRBAC blocker: %+v", rep.Findings)
	}
	if f.Owner == nil || f.Owner.State != diagnose.OwnerAlive || f.Owner.ServiceAccount != ops+"/gadget-operator" {
		t.Errorf("owner = %+v, want the running gadget-operator and its ServiceAccount", f.Owner)
	}
	if !contains(f.Message, "may not patch or update configmaps "+ns+"/gadget") {
		t.Errorf("message = %q", f.Message)
	}
	assertRemedy(t, f, "kubectl create role gadget-operator-finalizers -n "+ns+" --verb=patch,update --resource=configmaps")
	if f.FixOwner != "operator packaging (its RBAC); cluster admin" || !contains(f.Leaks, "gadget-operator") {
		t.Errorf("fix owner %q, leaks %q", f.FixOwner, f.Leaks)
	}
	if plugintest.Root(rep, diagnose.CauseOwnerLacksRBAC, "gadget") == nil {
		t.Errorf("root blockers = %+v", rep.RootBlockers)
	}

	// A user who may not ask the authorizer gets no B4 guess either way.
	ro := plugintest.ReadOnlyKubeconfig(t, cfg, cs, "teardown-readonly")
	reader := cli(t, ro, nil, "explain", "configmap/gadget", "-n", ns, "-o", "json")
	if strings.Contains(reader.out, diagnose.CauseOwnerLacksRBAC) || !strings.Contains(reader.out, diagnose.CauseCleanupInProgress) {
		t.Errorf("read-only user: exit %d\n%s%s", reader.code, reader.out, reader.err)
	}

	// Grant what the catalog asks for: the owner can now do its job.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "gadget-operator", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "update"}}}}
	if _, err := cs.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gadget-operator", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gadget-operator"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gadget-operator", Namespace: ops}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, f = explainUntil(t, 30*time.Second, diagnose.CauseCleanupInProgress, "gadget", "configmap/gadget", "-n", ns)
	if rep.Blocked || plugintest.Find(rep, diagnose.CauseOwnerLacksRBAC, "") != nil {
		t.Errorf("still blocked once granted: %+v", rep.Findings)
	}
	if f.Owner == nil || !contains(strings.Join(f.Owner.Evidence, "\n"), "SubjectAccessReview: ServiceAccount "+ops+"/gadget-operator may patch configmaps") {
		t.Errorf("evidence = %+v", f.Owner)
	}
}

// freshLease creates a leader-election Lease renewed now, as a running
// controller holds it.
func freshLease(t *testing.T, ns, name, holder string) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](3600), RenewTime: &now}}
	if _, err := cs.CoordinationV1().Leases(ns).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Lease %s/%s: %v", ns, name, err)
	}
	t.Cleanup(func() { _ = cs.CoordinationV1().Leases(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// warningEvent records a Warning Event about obj, as a controller would.
func warningEvent(t *testing.T, obj corev1.ObjectReference, component, reason, message string) {
	t.Helper()
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: obj.Name + ".", Namespace: obj.Namespace},
		InvolvedObject: obj, Type: corev1.EventTypeWarning, Reason: reason, Message: message,
		Source: corev1.EventSource{Component: component}, FirstTimestamp: now, LastTimestamp: now, Count: 4}
	if _, err := cs.CoreV1().Events(obj.Namespace).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Event: %v", err)
	}
}

// C7: a LoadBalancer Service whose cloud load balancer nobody deletes: no
// cloud-controller-manager at all, then one that runs but fails.
func TestExplainLoadBalancerCleanup(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop-lb", Namespace: ns, Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}, Selector: map[string]string{"app": "shop"}}}
	got, err := cs.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().Services(ns).Patch(context.Background(), "shop-lb", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}}
	if _, err := cs.CoreV1().Services(ns).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Services(ns).Delete(t.Context(), "shop-lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explainJSON(t, "service/shop-lb", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseLoadBalancerCleanup, "shop-lb")
	if f == nil || f.Catalog != "C7" || f.Severity != diagnose.SeverityBlocker {
		t.Fatalf("no C7 blocker: %+v", rep.Findings)
	}
	if f.Owner == nil || f.Owner.State != diagnose.OwnerMissing || !contains(f.Message, "no cloud-controller-manager workload or Lease was found") {
		t.Errorf("owner %+v, message %q", f.Owner, f.Message)
	}
	assertRemedy(t, f, "fix the cloud-controller-manager")
	if !contains(f.Leaks, "the cloud load balancer (203.0.113.10)") || !contains(f.FixOwner, "cloud admin") {
		t.Errorf("leaks %q, fix owner %q", f.Leaks, f.FixOwner)
	}
	if plugintest.Root(rep, diagnose.CauseLoadBalancerCleanup, "shop-lb") == nil {
		t.Errorf("root blockers = %+v", rep.RootBlockers)
	}

	// A running cloud-controller-manager (its Lease is renewed) with no
	// complaint: the cleanup is in progress. Another component's warning
	// about the Service (the API server's IP repair loop) is not its
	// complaint.
	ops := newNamespace(t)
	freshLease(t, ops, "cloud-controller-manager", "cloud-controller-manager-7f9c_0a1b")
	warningEvent(t, corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: "shop-lb", UID: got.UID},
		"ipallocator-repair-controller", "ClusterIPNotAllocated", "Cluster IP [IPv4]: 10.0.0.202 is not allocated; repairing")
	rep = explainJSON(t, "service/shop-lb", "-n", ns)
	if f := plugintest.Find(rep, diagnose.CauseLoadBalancerCleanup, "shop-lb"); f == nil || f.Severity != diagnose.SeverityWaiting || f.Owner.State != diagnose.OwnerAlive || rep.Blocked {
		t.Fatalf("with a live cloud-controller-manager: %+v", rep.Findings)
	}
	// It runs but the cloud refuses: the warning events say why.
	warningEvent(t, corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: "shop-lb", UID: got.UID},
		"service-controller", "DeletingLoadBalancerFailed", "Error deleting load balancer: AccessDenied: elasticloadbalancing:DeleteLoadBalancer")
	rep = explainJSON(t, "service/shop-lb", "-n", ns)
	f = plugintest.Find(rep, diagnose.CauseLoadBalancerCleanup, "shop-lb")
	if f == nil || f.Severity != diagnose.SeverityBlocker || !contains(f.Message, "DeletingLoadBalancerFailed: Error deleting load balancer: AccessDenied") {
		t.Fatalf("the cloud error is not reported: %+v", f)
	}
}

// C8: a finished Job pod held by batch.kubernetes.io/job-tracking because the
// Job controller does not run (this control plane has none): the Job was
// never synced. Once the Job shows the controller counted the pod, the
// finalizer is only waiting.
func TestExplainJobTrackingFinalizer(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/report"}}}}}}
	job, err := cs.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "report-x7k2p", Namespace: ns, Labels: job.Spec.Template.Labels,
		Finalizers:      []string{"batch.kubernetes.io/job-tracking"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-" + ns, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/report"}}}}
	pod, err = cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{FieldManager: "job-controller"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().Pods(ns).Patch(context.Background(), pod.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	pod.Status.Phase = corev1.PodSucceeded
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explainJSON(t, "pod/"+pod.Name, "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseJobTrackingPending, pod.Name)
	if f == nil || f.Catalog != "C8" || f.Severity != diagnose.SeverityBlocker || !contains(f.Message, "has never synced Job report") {
		t.Fatalf("no C8 blocker: %+v", rep.Findings)
	}
	if f.Owner == nil || f.Owner.State != diagnose.OwnerDown {
		t.Errorf("owner = %+v, want the Job controller, down", f.Owner)
	}
	assertRemedy(t, f, "kubectl teardown release pod/"+pod.Name+" -n "+ns+" --finalizer batch.kubernetes.io/job-tracking")
	if f.Leaks != "only the Job's accounting of this pod" || !contains(f.FixOwner, "Job controller") {
		t.Errorf("leaks %q, fix owner %q", f.Leaks, f.FixOwner)
	}
	// A finished pod waits on nobody but its finalizer: no node finding
	// although its node does not exist.
	if plugintest.Root(rep, diagnose.CauseJobTrackingPending, pod.Name) == nil || plugintest.Find(rep, diagnose.CausePodOnMissingNode, "") != nil {
		t.Errorf("root blockers = %+v", rep.RootBlockers)
	}

	// The Job controller has synced the Job and counted the pod: it is
	// about to remove the finalizer.
	now := metav1.Now()
	job.Status = batchv1.JobStatus{StartTime: &now, Active: 0,
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{pod.UID}}}
	if _, err := cs.BatchV1().Jobs(ns).UpdateStatus(t.Context(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep = explainJSON(t, "pod/"+pod.Name, "-n", ns)
	f = plugintest.Find(rep, diagnose.CauseJobTrackingPending, pod.Name)
	if f == nil || f.Severity != diagnose.SeverityWaiting || !contains(f.Message, "has counted the pod") || rep.Blocked {
		t.Errorf("a counted pod is not waiting: %+v", rep.Findings)
	}
}

// C10: a ServiceCIDR held by its finalizer while a Service still has a
// ClusterIP from it that no other ServiceCIDR covers.
func TestExplainServiceCIDRInUse(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	name := "c10-" + ns
	sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"networking.k8s.io/service-cidr-finalizer"}},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.123.0.0/24"}}}
	got, err := cs.NetworkingV1().ServiceCIDRs().Create(t.Context(), sc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.NetworkingV1().ServiceCIDRs().Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = cs.NetworkingV1().ServiceCIDRs().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// What the ServiceCIDR controller (not running here) would report.
	got.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if _, err := cs.NetworkingV1().ServiceCIDRs().UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: "10.123.0.10", Ports: []corev1.ServicePort{{Port: 80}}}}
	testenv.Eventually(t, 30*time.Second, "a ClusterIP from the new range", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err := cs.NetworkingV1().ServiceCIDRs().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explainJSON(t, "servicecidr/"+name)
	f := plugintest.Find(rep, diagnose.CauseServiceCIDRInUse, name)
	if f == nil || f.Catalog != "C10" || f.Severity != diagnose.SeverityBlocker || !contains(f.Message, "1 IP address(es) in 10.123.0.0/24") {
		t.Fatalf("no C10 blocker: %+v", rep.Findings)
	}
	ip := plugintest.Find(rep, diagnose.CauseIPAddressAllocated, "10.123.0.10")
	if ip == nil || !contains(ip.Message, "Service "+ns+"/legacy") {
		t.Fatalf("the Service's address is not named: %+v", rep.Findings)
	}
	assertRemedy(t, ip, "kubectl delete service legacy -n "+ns)
	assertRemedy(t, f, "add a ServiceCIDR that covers them")
	if !contains(f.Leaks, "no ServiceCIDR covers") || plugintest.Root(rep, diagnose.CauseIPAddressAllocated, "10.123.0.10") == nil {
		t.Errorf("leaks %q, roots %+v", f.Leaks, rep.RootBlockers)
	}

	// Deleting the Service releases the address: only the controller's
	// pass is left.
	if err := cs.CoreV1().Services(ns).Delete(t.Context(), "legacy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the address to be released", func(ctx context.Context) (bool, error) {
		_, err := cs.NetworkingV1().IPAddresses().Get(ctx, "10.123.0.10", metav1.GetOptions{})
		return ignoreNotFound(err) == nil && err != nil, nil
	})
	rep = explainJSON(t, "servicecidr/"+name)
	if f := plugintest.Find(rep, diagnose.CauseServiceCIDRInUse, name); f == nil || f.Severity != diagnose.SeverityWaiting || len(f.Children) != 0 {
		t.Errorf("with no address left: %+v", rep.Findings)
	}
}

// C11: a VolumeAttributesClass held by kubernetes.io/vac-protection while a
// PVC still names it.
func TestExplainVolumeAttributesClassInUse(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	name := "fast-" + ns
	vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"kubernetes.io/vac-protection"}},
		DriverName: "csi.teardown.test", Parameters: map[string]string{"iops": "3000"}}
	if _, err := cs.StorageV1().VolumeAttributesClasses().Create(t.Context(), vac, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.StorageV1().VolumeAttributesClasses().Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeAttributesClassName: ptr.To(name),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.StorageV1().VolumeAttributesClasses().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explainJSON(t, "volumeattributesclass/"+name)
	f := plugintest.Find(rep, diagnose.CauseVACInUse, name)
	if f == nil || f.Catalog != "C11" || f.Severity != diagnose.SeverityBlocker || !contains(f.Message, "1 claim(s) or volume(s) still use") {
		t.Fatalf("no C11 blocker: %+v", rep.Findings)
	}
	assertRemedy(t, f, "point the PVCs and PVs that still reference the VolumeAttributesClass at another class")
	if !contains(f.Leaks, "a class that no longer exists") {
		t.Errorf("leaks = %q", f.Leaks)
	}
	claim := plugintest.Find(rep, diagnose.CauseVACInUse, "db-data")
	if claim == nil || !contains(claim.Message, "spec.volumeAttributesClassName") || plugintest.Root(rep, diagnose.CauseVACInUse, "db-data") == nil {
		t.Fatalf("the claim is not the root blocker: %+v", rep.RootBlockers)
	}
	assertRemedy(t, claim, "kubectl patch pvc db-data -n "+ns)

	// The claim goes (no pod uses it: drop pvc-protection, which no
	// controller here removes).
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(t.Context(), "db-data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Patch(t.Context(), "db-data", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); ignoreNotFound(err) != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the claim to go", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "db-data", metav1.GetOptions{})
		return ignoreNotFound(err) == nil && err != nil, nil
	})
	rep = explainJSON(t, "volumeattributesclass/"+name)
	if f := plugintest.Find(rep, diagnose.CauseVACInUse, name); f == nil || f.Severity != diagnose.SeverityWaiting || len(f.Children) != 0 {
		t.Errorf("with no claim left: %+v", rep.Findings)
	}
}

// D5: a Node held by Karpenter's termination finalizer. With Karpenter
// running, the drain is stuck on a PodDisruptionBudget that allows no
// disruption; with Karpenter gone, Karpenter is the root blocker.
func TestExplainNodeFinalizer(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	node := "d5-" + ns
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Finalizers: []string{"karpenter.sh/termination"}}}
	if _, err := cs.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{FieldManager: "karpenter"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	boundPod(t, ns, "db-0", node, map[string]string{"app": "db"})
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	got, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the disruption controller (not running here) would compute.
	got.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: got.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ops := newNamespace(t)
	freshLease(t, ops, "karpenter-leader-election", "karpenter-6d8f9c-x2k4q")
	if err := cs.CoreV1().Nodes().Delete(t.Context(), node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explainJSON(t, "node/"+node)
	f := plugintest.Find(rep, diagnose.CauseNodeDrainBlocked, node)
	if f == nil || f.Catalog != "D5" || f.Severity != diagnose.SeverityBlocker || f.Owner == nil || f.Owner.Component != "Karpenter" || f.Owner.State != diagnose.OwnerAlive {
		t.Fatalf("no D5 blocker with Karpenter alive: %+v", rep.Findings)
	}
	if !contains(f.Leaks, "the cloud instance") {
		t.Errorf("leaks = %q", f.Leaks)
	}
	b := plugintest.Find(rep, diagnose.CauseDrainBlockedByPDB, "db")
	if b == nil || !contains(b.Message, "covers pod(s) db-0") || plugintest.Root(rep, diagnose.CauseDrainBlockedByPDB, "db") == nil {
		t.Fatalf("the budget is not the root blocker: %+v", rep.RootBlockers)
	}
	assertRemedy(t, b, "scale the workload up")

	// Karpenter gone: nothing drains the node or removes the finalizer.
	if err := cs.CoordinationV1().Leases(ops).Delete(t.Context(), "karpenter-leader-election", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep = explainJSON(t, "node/"+node)
	f = plugintest.Find(rep, diagnose.CauseOwnerGone, node)
	if f == nil || f.Catalog != "B1" || !contains(f.Message, "1 pod(s) still run on the node") || plugintest.Root(rep, diagnose.CauseOwnerGone, node) == nil {
		t.Fatalf("Karpenter gone is not the root blocker: %+v", rep.Findings)
	}
	assertRemedy(t, f, "reinstall or restart Karpenter")
	if b := plugintest.Find(rep, diagnose.CauseDrainBlockedByPDB, "db"); b == nil || b.Severity != diagnose.SeverityWarning {
		t.Errorf("the budget should be a warning while Karpenter is gone: %+v", b)
	}
}

// C6: a source claim held by cloning-protection while a clone of it is
// still Pending; the CSI driver's controller (its csi-provisioner sidecar)
// runs.
func TestExplainCloneInProgress(t *testing.T) {
	needCluster(t)
	ops := newNamespace(t)
	runningDeployment(t, ops, "hostpath-csi-controller", "hostpath-csi",
		corev1.Container{Name: "csi-provisioner", Image: "registry.k8s.io/sig-storage/csi-provisioner:v5.2.0"})
	plugintest.GrantClusterWide(t, cs, ops, "hostpath-csi", "", "persistentvolumeclaims")
	ns := newNamespace(t)
	claim := func(name string, fins []string, src *corev1.TypedLocalObjectReference) {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: fins},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("csi-hostpath"), DataSource: src,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), pvc, metav1.CreateOptions{FieldManager: "csi-provisioner"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cs.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
	}
	claim("golden", []string{"provisioner.storage.kubernetes.io/cloning-protection"}, nil)
	claim("golden-copy", nil, &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "golden"})
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(t.Context(), "golden", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explainJSON(t, "pvc/golden", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseCloneInProgress, "golden")
	if f == nil || f.Catalog != "C6" || f.Severity != diagnose.SeverityBlocker || f.Owner == nil || f.Owner.State != diagnose.OwnerAlive {
		t.Fatalf("no C6 blocker with a running provisioner: %+v", rep.Findings)
	}
	if f.Owner.Workload == nil || f.Owner.Workload.Name != "hostpath-csi-controller" {
		t.Errorf("the provisioner was not found by its sidecar container: %+v", f.Owner)
	}
	assertRemedy(t, f, "finish or delete the clone claims")
	clone := plugintest.Find(rep, diagnose.CauseCloneInProgress, "golden-copy")
	if clone == nil || !contains(clone.Message, "is still Pending") || plugintest.Root(rep, diagnose.CauseCloneInProgress, "golden-copy") == nil {
		t.Fatalf("the Pending clone is not the root blocker: %+v", rep.RootBlockers)
	}
	assertRemedy(t, clone, "kubectl delete pvc golden-copy -n "+ns)
}

// C4: a VolumeAttachment held by the CSI attacher's finalizer while its
// node is NotReady: the attacher runs but cannot detach.
func TestExplainVolumeDetachBlocked(t *testing.T) {
	needCluster(t)
	ops := newNamespace(t)
	runningDeployment(t, ops, "teardown-csi-controller", "teardown-csi",
		corev1.Container{Name: "csi-attacher", Image: "registry.k8s.io/sig-storage/csi-attacher:v4.8.0"})
	plugintest.GrantClusterWide(t, cs, ops, "teardown-csi", "storage.k8s.io", "volumeattachments")
	node := "c4-" + ops
	plugintest.NotReadyNode(t, cs, node)
	name := "csi-" + ops
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"external-attacher/csi-teardown-test"}},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.teardown.test", NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + ops)}}}
	got, err := cs.StorageV1().VolumeAttachments().Create(t.Context(), va, metav1.CreateOptions{FieldManager: "csi-attacher"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.StorageV1().VolumeAttachments().Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	got.Status.Attached = true
	if _, err := cs.StorageV1().VolumeAttachments().UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.StorageV1().VolumeAttachments().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explainJSON(t, "volumeattachment/"+name)
	f := plugintest.Find(rep, diagnose.CauseVolumeDetachBlocked, name)
	if f == nil || f.Catalog != "C4" || f.Severity != diagnose.SeverityBlocker || f.Owner == nil || f.Owner.State != diagnose.OwnerAlive || f.Owner.Component != "CSI external-attacher" {
		t.Fatalf("no C4 blocker with a running attacher: %+v", rep.Findings)
	}
	if len(f.Children) != 1 || !contains(f.Children[0].Message, "Ready=Unknown") || !f.Children[0].Root {
		t.Fatalf("the NotReady node is not the root blocker: %+v", f.Children)
	}
	assertRemedy(t, &f.Children[0], "kubectl taint node "+node+" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute")
	if !contains(f.Leaks, "a volume attached to a node") {
		t.Errorf("leaks = %q", f.Leaks)
	}
}

// C12: a DRA ResourceClaim held by delete-protection while a running pod
// reserves it; once the pod is gone, only the claim controller's pass is
// left.
func TestExplainResourceClaimInUse(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	node := "c12-" + ns
	boundPod(t, ns, "trainer", node, nil)
	pod, err := cs.CoreV1().Pods(ns).Get(t.Context(), "trainer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: ns, Finalizers: []string{"resource.kubernetes.io/delete-protection"}},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.teardown.test"}}}}}}
	got, err := cs.ResourceV1().ResourceClaims(ns).Create(t.Context(), claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.ResourceV1().ResourceClaims(ns).Patch(context.Background(), "gpu", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	// What the scheduler (not running here) writes when it allocates.
	got.Status = resourcev1.ResourceClaimStatus{
		Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.teardown.test", Pool: node, Device: "gpu-0"}}}},
		ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "trainer", UID: pod.UID}}}
	if _, err := cs.ResourceV1().ResourceClaims(ns).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.ResourceV1().ResourceClaims(ns).Delete(t.Context(), "gpu", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explainJSON(t, "resourceclaim/gpu", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseResourceClaimInUse, "gpu")
	if f == nil || f.Catalog != "C12" || f.Severity != diagnose.SeverityBlocker || !contains(f.Message, "allocated gpu.teardown.test/"+node+"/gpu-0") {
		t.Fatalf("no C12 blocker: %+v", rep.Findings)
	}
	if !contains(f.Leaks, "devices still allocated") {
		t.Errorf("leaks = %q", f.Leaks)
	}
	p := plugintest.Find(rep, diagnose.CauseResourceClaimInUse, "trainer")
	if p == nil || plugintest.Root(rep, diagnose.CauseResourceClaimInUse, "trainer") == nil {
		t.Fatalf("the pod is not the root blocker: %+v", rep.RootBlockers)
	}
	assertRemedy(t, p, "kubectl delete pod trainer -n "+ns)

	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "trainer", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the pod to go", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "trainer", metav1.GetOptions{})
		return ignoreNotFound(err) == nil && err != nil, nil
	})
	rep = explainJSON(t, "resourceclaim/gpu", "-n", ns)
	if f := plugintest.Find(rep, diagnose.CauseResourceClaimInUse, "gpu"); f == nil || f.Severity != diagnose.SeverityWaiting || !contains(f.Message, "drops the 1 reservation(s)") {
		t.Errorf("with the pod gone: %+v", rep.Findings)
	}
}
