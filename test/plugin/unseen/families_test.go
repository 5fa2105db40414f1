/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// Issue 26: the seven families of questions asked of a finalizer whose
// owner runs. In each scenario, from a real thread, the owner's workload is
// up and may write the object, and the deletion never ends for a reason the
// cluster records elsewhere: before the families, explain said the cleanup
// was in progress (PROGRESSING, exit 0), or blamed the owner's words or a
// platform that runs. Each test names the cause, the object that holds it
// (the actor) and the owner that waits.

// familyRoot asserts that explain's first root blocker is cause on an
// object of kind and name, and that fin's finding names owner as alive and
// what it waits on.
func familyRoot(t *testing.T, rep *report, fin, owner, cause, kind, name string) finding {
	t.Helper()
	if !rep.Blocked || len(rep.RootBlockers) == 0 {
		t.Fatalf("not blocked (verdict %q); findings:\n%s", rep.Verdict, dump(rep.Findings))
	}
	first := rep.RootBlockers[0]
	if first.Cause != cause || first.Object == nil || first.Object.Kind != kind || first.Object.Name != name {
		t.Fatalf("first root blocker %s on %s, want %s on %s %s; roots:\n%s", first.Cause, dump(first.Object), cause, kind, name, dump(rep.RootBlockers))
	}
	f := find(rep, fin)
	if f == nil || f.Owner == nil || f.Owner.State != "alive" || !strings.Contains(f.Owner.Component, owner) {
		t.Fatalf("finding for %s: want its owner %s alive:\n%s", fin, owner, dump(f))
	}
	if f.Cause == "OwnerWaitingOn" {
		mustContain(t, "what the owner waits on", f.Message, cause+" "+kind)
	}
	if first.Remedy == "" {
		t.Errorf("root blocker %s without a remedy", cause)
	}
	return first
}

// clusterCRD creates a cluster-scoped CRD unless it exists, and waits
// until it is served.
func clusterCRD(t *testing.T, group, kind, plural, version string) {
	t.Helper()
	scopedCRD(t, apiextensionsv1.ClusterScoped, group, kind, plural, version)
}

// scopedCRD creates a CRD of scope unless it exists (approved, for the
// protected *.k8s.io groups), and waits until it is served.
func scopedCRD(t *testing.T, scope apiextensionsv1.ResourceScope, group, kind, plural, version string) {
	t.Helper()
	ax := apiextensionsclient.NewForConfigOrDie(restConfig)
	name := plural + "." + group
	if _, err := ax.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), name, metav1.GetOptions{}); err == nil {
		return
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/891"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: kindLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}}}
	if _, err := ax.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	testenv.Eventually(t, 30*time.Second, "CRD "+name+" served", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
}

// dropCRD deletes a CRD and waits until it is gone.
func dropCRD(t *testing.T, name string) {
	t.Helper()
	ax := apiextensionsclient.NewForConfigOrDie(restConfig)
	if err := ax.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if _, err := ax.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("CRD %s not gone: %v", name, ctx.Err())
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// clusterObject creates a cluster-scoped object, written by manager; with
// finalizers, it is deleted and stays Terminating.
func clusterObject(t *testing.T, gvr schema.GroupVersionResource, obj map[string]any, manager string, finalizers ...string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetFinalizers(finalizers)
	if _, err := dyn.Resource(gvr).Create(t.Context(), u, metav1.CreateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
	name := u.GetName()
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvr).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if len(finalizers) == 0 {
		return
	}
	if err := dyn.Resource(gvr).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Family 1: the object's own "do not proceed" mark. Crossplane skips a
// resource annotated crossplane.io/paused, deletion included: "a paused
// claim ... stays in deleting state forever" with Ready=True
// (https://github.com/crossplane/crossplane/issues/4839). Crossplane runs,
// so explain said the cleanup was in progress.
func TestFamilyObjectPaused(t *testing.T) {
	needCluster(t)
	const group, fin = "database.example.org", "finalizer.apiextensions.crossplane.io"
	ensureCRD(t, group, "PostgreSQLInstance", "postgresqlinstances", "v1alpha1")
	xp := plugintest.NewNamespace(t, cs, "crossplane-system")
	operator(t, xp, "crossplane", "crossplane", []string{"crossplane"}, "xpkg.upbound.io/crossplane/crossplane:v1.14.0", 1)
	t.Cleanup(func() { // a workload of Crossplane's: TestPlatformAbsent wants none
		_ = cs.AppsV1().Deployments(xp).Delete(context.Background(), "crossplane", metav1.DeleteOptions{})
	})
	grant(t, xp, "crossplane", "", group, "postgresqlinstances")
	ns := plugintest.NewNamespace(t, cs, "example")
	gvr := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "postgresqlinstances"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1alpha1", "kind": "PostgreSQLInstance",
		"metadata": map[string]any{"name": "db", "namespace": ns, "finalizers": []any{fin}, "annotations": map[string]any{"crossplane.io/paused": "true"}},
		"spec":     map[string]any{"parameters": map[string]any{"storageGB": int64(20)}},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)},
			map[string]any{"type": "Synced", "status": "False", "reason": "ReconcilePaused", "lastTransitionTime": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)},
		}}}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{FieldManager: "crossplane"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), "db", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := dyn.Resource(gvr).Namespace(ns).Delete(t.Context(), "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explain(t, "postgresqlinstances."+group+"/db", "-n", ns)
	f := familyRoot(t, rep, fin, "crossplane", "ObjectPaused", "PostgreSQLInstance", "db")
	mustContain(t, "message", f.Message, "crossplane.io/paused")
	mustContain(t, "remedy", f.Remedy, "crossplane.io/paused")
}

// Family 2: objects that name the target. A GatewayClass keeps
// gateway-exists-finalizer while a Gateway of any namespace names it
// (https://github.com/tigera/operator/pull/5292: the class could not be
// deleted while Gateways used it). The gateway controller runs.
func TestFamilyInUseBy(t *testing.T) {
	needCluster(t)
	const group, fin = "gateway.networking.k8s.io", "gateway-exists-finalizer.gateway.networking.k8s.io"
	clusterCRD(t, group, "GatewayClass", "gatewayclasses", "v1")
	scopedCRD(t, apiextensionsv1.NamespaceScoped, group, "Gateway", "gateways", "v1")
	eg := plugintest.NewNamespace(t, cs, "envoy-gateway-system")
	operator(t, eg, "envoy-gateway", "envoy-gateway", []string{"envoy-gateway"}, "docker.io/envoyproxy/gateway:v1.2.0", 1)
	grant(t, eg, "envoy-gateway", "", group, "gatewayclasses")
	shop := plugintest.NewNamespace(t, cs, "shop")
	class := "eg-" + shop
	gw := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "web", "namespace": shop},
		"spec":     map[string]any{"gatewayClassName": class, "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gateways"}).Namespace(shop).Create(t.Context(), gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clusterObject(t, schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gatewayclasses"},
		map[string]any{"apiVersion": group + "/v1", "kind": "GatewayClass", "metadata": map[string]any{"name": class},
			"spec": map[string]any{"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}}, "envoy-gateway", fin)

	rep := explain(t, "gatewayclasses."+group+"/"+class)
	f := familyRoot(t, rep, fin, "envoy-gateway", "InUseBy", "Gateway", "web")
	if f.Object.Namespace != shop {
		t.Errorf("the Gateway's namespace %q, want %q", f.Object.Namespace, shop)
	}
	mustContain(t, "remedy", f.Remedy, "delete Gateway "+shop+"/web")
}

// Family 3: the place the remover acts in. Karmada's execution controller
// removes karmada.io/execution-controller from a Work once it deleted the
// workload on the member cluster the Work's namespace names; with that
// cluster not Ready the Work stays (https://github.com/karmada-io/karmada/issues/3740).
// karmada-controller-manager runs.
func TestFamilyRemoverPlaceUnavailable(t *testing.T) {
	needCluster(t)
	const clusterGroup, workGroup, fin = "cluster.karmada.io", "work.karmada.io", "karmada.io/execution-controller"
	clusterCRD(t, clusterGroup, "Cluster", "clusters", "v1alpha1")
	ensureCRD(t, workGroup, "Work", "works", "v1alpha1")
	km := plugintest.NewNamespace(t, cs, "karmada-system")
	operator(t, km, "karmada-controller-manager", "karmada-controller-manager", []string{"/bin/karmada-controller-manager"}, "docker.io/karmada/karmada-controller-manager:v1.6.0", 1)
	grant(t, km, "karmada-controller-manager", "", workGroup, "works")
	member := "member-" + strings.TrimPrefix(km, "karmada-system-")
	clusterObject(t, schema.GroupVersionResource{Group: clusterGroup, Version: "v1alpha1", Resource: "clusters"},
		map[string]any{"apiVersion": clusterGroup + "/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": member},
			"spec": map[string]any{"syncMode": "Push", "apiEndpoint": "https://172.18.0.5:6443"},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "ClusterNotReachable",
				"message": "cluster is not reachable", "lastTransitionTime": time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)}}}}, "karmada-controller-manager")
	ns := "karmada-es-" + member
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	terminatingObject(t, workGroup, "v1alpha1", "Work", "works", ns, "nginx-687f7fb96f", "karmada-controller-manager", []string{fin},
		map[string]any{"workload": map[string]any{"manifests": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "nginx", "namespace": "default"}}}}}, nil)

	rep := explain(t, "works."+workGroup+"/nginx-687f7fb96f", "-n", ns)
	f := familyRoot(t, rep, fin, "karmada-controller-manager", "RemoverPlaceUnavailable", "Cluster", member)
	mustContain(t, "message", f.Message, "NotReady", "ClusterNotReachable", "karmada-controller-manager")
}

// Family 4: the remover by what runs. A Crossplane provider runs as a
// Deployment named after its package revision, with the binary that writes
// its finalizer (field manager crossplane-helm-provider) in its container's
// arguments: no workload is named or labelled after it
// (https://github.com/crossplane-contrib/provider-helm/issues/102). Before,
// explain called the running provider missing (FinalizerOwnerGone).
func TestFamilyRemoverByWhatRuns(t *testing.T) {
	needCluster(t)
	const group, fin = "helm.crossplane.io", "in-use.crossplane.io"
	ensureCRD(t, group, "ProviderConfigUsage", "providerconfigusages", "v1beta1")
	// Gone at the end: a CRD of *.crossplane.io says Crossplane is
	// installed, which TestPlatformAbsent's Crossplane case says it is not.
	t.Cleanup(func() { dropCRD(t, "providerconfigusages."+group) })
	xp := plugintest.NewNamespace(t, cs, "upbound-system")
	const rev = "crossplane-contrib-provider-helm-1a2b3c"
	labels := map[string]string{"pkg.crossplane.io/revision": rev}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: rev, Namespace: xp},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: rev, Containers: []corev1.Container{{Name: "package-runtime",
					Image: "xpkg.upbound.io/crossplane-contrib/provider-helm:v0.9.0", Args: []string{"crossplane-helm-provider", "--debug"}}}}}}}
	got, err := cs.AppsV1().Deployments(xp).Create(t.Context(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a workload of Crossplane's, for TestPlatformAbsent too
		_ = cs.AppsV1().Deployments(xp).Delete(context.Background(), rev, metav1.DeleteOptions{})
	})
	got.Status = appsv1.DeploymentStatus{ObservedGeneration: got.Generation, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1}
	if _, err := cs.AppsV1().Deployments(xp).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(xp).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: rev}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grant(t, xp, rev, "", group, "providerconfigusages")
	ns := plugintest.NewNamespace(t, cs, "apps")
	terminatingObject(t, group, "v1beta1", "ProviderConfigUsage", "providerconfigusages", ns, "release-1", "crossplane-helm-provider", []string{fin},
		map[string]any{"providerConfigRef": map[string]any{"name": "helm-provider"}}, nil)

	rep := explain(t, "providerconfigusages."+group+"/release-1", "-n", ns)
	f := find(rep, fin)
	if f == nil || f.Owner == nil || f.Owner.State != "alive" || f.Owner.Workload == nil || f.Owner.Workload.Name != rev {
		t.Fatalf("the provider runs (Deployment %s/%s), want it named the owner, alive:\n%s", xp, rev, dump(f))
	}
	mustContain(t, "owner evidence", strings.Join(f.Owner.Evidence, "\n"), "runs \"crossplane-helm-provider\", the client that wrote the finalizer")
	mustNotContain(t, "remedy", f.Remedy, "kubectl teardown release")
	if f.Cause == "FinalizerOwnerGone" || f.Cause == "FinalizerPlatformAbsent" || rep.Verdict == "Progressing" {
		t.Errorf("cause %s, verdict %q: want the running provider waited on, and no all-clear without evidence", f.Cause, rep.Verdict)
	}
}

// Family 5: a helper's failure followed to its cause. The local-path
// provisioner deletes a volume's data with a helper pod; the helper fails
// and the provisioner only says so ("failed to delete volume ... pod
// helper-pod-delete-... failed"); the pod's own words say why
// (https://github.com/rancher/local-path-provisioner/issues/181). Here
// the helper was refused a write its ServiceAccount may not make, which a
// SubjectAccessReview confirms.
func TestFamilyHelperFailed(t *testing.T) {
	needCluster(t)
	const group, fin = "storage.example.io", "storage.example.io/data"
	ensureCRD(t, group, "LocalVolume", "localvolumes", "v1")
	lp := plugintest.NewNamespace(t, cs, "local-path-storage")
	operator(t, lp, "local-path-provisioner", "local-path-provisioner", []string{"local-path-provisioner"}, "rancher/local-path-provisioner:v0.0.24", 1)
	grant(t, lp, "local-path-provisioner", "", group, "localvolumes")
	if _, err := cs.CoreV1().ServiceAccounts(lp).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "helper"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	helper := "helper-pod-delete-pvc-47c7"
	forbidden := `localvolumes.storage.example.io "pvc-47c7" is forbidden: User "system:serviceaccount:` + lp + `:helper" cannot patch resource "localvolumes" in API group "storage.example.io" in the namespace "` + lp + `"`
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: helper, Namespace: lp},
		Spec: corev1.PodSpec{ServiceAccountName: "helper", NodeName: "worker-1", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "helper-pod", Image: "busybox", Command: []string{"sh", "-c", "rm -rf /data/pvc-47c7"}}}}}
	got, err := cs.CoreV1().Pods(lp).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "helper-pod", Image: "busybox",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: forbidden}}}}}
	if _, err := cs.CoreV1().Pods(lp).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	terminatingObject(t, group, "v1", "LocalVolume", "localvolumes", lp, "pvc-47c7", "local-path-provisioner", []string{fin},
		map[string]any{"path": "/opt/local-path-provisioner/pvc-47c7"},
		map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "DeleteFailed",
			"message":            "failed to delete volume pvc-47c7: pod " + lp + "/" + helper + " failed",
			"lastTransitionTime": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}})

	rep := explain(t, "localvolumes."+group+"/pvc-47c7", "-n", lp)
	f := familyRoot(t, rep, fin, "local-path-provisioner", "HelperFailed", "Pod", helper)
	mustContain(t, "message", f.Message, "cannot patch resource", "a SubjectAccessReview confirms it may not")
}

// Family 6: what the owner needs went with the namespace. The RabbitMQ
// messaging topology operator deletes a User with the credentials of its
// Secret; deleting the namespace deletes the Secret too and the User stays
// Terminating for good (https://github.com/rabbitmq/messaging-topology-operator/issues/277).
func TestFamilyNeedGoneWithNamespace(t *testing.T) {
	needCluster(t)
	const group, fin = "rabbitmq.com", "deletion.finalizers.users.rabbitmq.com"
	ensureCRD(t, group, "User", "users", "v1beta1")
	op := plugintest.NewNamespace(t, cs, "rabbitmq-system")
	operator(t, op, "messaging-topology-operator", "messaging-topology-operator", []string{"/manager"}, "rabbitmqoperator/messaging-topology-operator:1.2.1", 1)
	grant(t, op, "messaging-topology-operator", "", group, "users")
	ns := plugintest.NewNamespace(t, cs, "test")
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "test-creds"},
		StringData: map[string]string{"username": "my-fav-user", "password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "users"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1beta1", "kind": "User",
		"metadata": map[string]any{"name": "my-fav-user", "namespace": ns, "finalizers": []any{fin}},
		"spec":     map[string]any{"rabbitmqClusterReference": map[string]any{"name": "rabbit"}, "importCredentialsSecret": map[string]any{"name": "test-creds"}}}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{FieldManager: "messaging-topology-operator"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), "my-fav-user", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := cs.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the namespace controller deleted the Secret and the User is Terminating", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Secrets(ns).Get(ctx, "test-creds", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		got, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "my-fav-user", metav1.GetOptions{})
		return err == nil && got.GetDeletionTimestamp() != nil, nil
	})

	rep := explain(t, "users."+group+"/my-fav-user", "-n", ns)
	f := familyRoot(t, rep, fin, "messaging-topology-operator", "NeedGoneWithNamespace", "Secret", "test-creds")
	mustContain(t, "message", f.Message, "test-creds")
}

// Family 7: progress judged from evidence. Kubermatic's cluster cleanup
// controller said the same error for three days on a Cluster that never
// went ("no new finalizers can be added if the object is being deleted",
// count 800: https://github.com/kubermatic/kubermatic/issues/7148). Its
// Events come from the cleanup controller's recorder, not a name of the
// workload's, and the Cluster carries two of its finalizers: they are not
// the owner's words, and explain said the cleanup was in progress.
func TestFamilyRecurringFailure(t *testing.T) {
	needCluster(t)
	const group = "kubermatic.k8c.io"
	fins := []string{"kubermatic.k8c.io/cleanup-in-cluster-lb", "kubermatic.k8c.io/cleanup-credentials-secrets"}
	ensureCRD(t, group, "ClusterTemplate", "clustertemplates", "v1")
	kkp := plugintest.NewNamespace(t, cs, "kubermatic")
	operator(t, kkp, "kubermatic-seed-controller-manager", "kubermatic-seed-controller-manager", []string{"kubermatic-seed-controller-manager"}, "quay.io/kubermatic/kubermatic:v2.21.0", 1)
	grant(t, kkp, "kubermatic-seed-controller-manager", "", group, "clustertemplates")
	ns := plugintest.NewNamespace(t, cs, "cluster")
	terminatingObject(t, group, "v1", "ClusterTemplate", "clustertemplates", ns, "xyz7lq", "kubermatic-seed-controller-manager", fins,
		map[string]any{"humanReadableName": "prod"}, nil)
	got, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "clustertemplates"}).Namespace(ns).Get(t.Context(), "xyz7lq", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, last := metav1.NewTime(time.Now().Add(-72*time.Hour)), metav1.NewTime(time.Now().Add(-time.Minute))
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "xyz7lq.17a3", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: group + "/v1", Kind: "ClusterTemplate", Namespace: ns, Name: "xyz7lq", UID: got.GetUID()},
		Type:           corev1.EventTypeWarning, Reason: "ReconcilingError", Message: "no new finalizers can be added if the object is being deleted",
		Source: corev1.EventSource{Component: "kkp-cluster-cleanup-controller"}, FirstTimestamp: first, LastTimestamp: last, Count: 812}
	if _, err := cs.CoreV1().Events(ns).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explain(t, "clustertemplates."+group+"/xyz7lq", "-n", ns)
	f := familyRoot(t, rep, fins[0], "kubermatic-seed-controller-manager", "RecurringFailure", "ClusterTemplate", "xyz7lq")
	mustContain(t, "message", f.Message, "no new finalizers can be added", "812 times")
}

// Progressing normally, beside the families: a Work whose member cluster is
// Ready and whose Applied condition changed since the deletion is not
// called blocked, and says its evidence (karmada-io/karmada#1053: deleting a
// Work removes the workload from a healthy member in seconds).
func TestFamilyProgressingNotBlocked(t *testing.T) {
	needCluster(t)
	const clusterGroup, workGroup, fin = "cluster.karmada.io", "work.karmada.io", "karmada.io/execution-controller"
	clusterCRD(t, clusterGroup, "Cluster", "clusters", "v1alpha1")
	ensureCRD(t, workGroup, "Work", "works", "v1alpha1")
	km := plugintest.NewNamespace(t, cs, "karmada-system")
	operator(t, km, "karmada-controller-manager", "karmada-controller-manager", []string{"/bin/karmada-controller-manager"}, "docker.io/karmada/karmada-controller-manager:v1.6.0", 1)
	grant(t, km, "karmada-controller-manager", "", workGroup, "works")
	member := "member-" + strings.TrimPrefix(km, "karmada-system-")
	clusterObject(t, schema.GroupVersionResource{Group: clusterGroup, Version: "v1alpha1", Resource: "clusters"},
		map[string]any{"apiVersion": clusterGroup + "/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": member},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ClusterReady",
				"lastTransitionTime": time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)}}}}, "karmada-controller-manager")
	ns := "karmada-es-" + member
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	terminatingObject(t, workGroup, "v1alpha1", "Work", "works", ns, "nginx-5c9b", "karmada-controller-manager", []string{fin},
		map[string]any{"workload": map[string]any{}},
		map[string]any{"conditions": []any{map[string]any{"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
			"lastTransitionTime": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}})
	// The controller notes the deletion a moment later (timestamps are
	// seconds: strictly after the deletion's).
	time.Sleep(1100 * time.Millisecond)
	patch := `{"status":{"conditions":[{"type":"Applied","status":"False","reason":"Deleting","lastTransitionTime":"` + time.Now().UTC().Format(time.RFC3339) + `"}]}}`
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: workGroup, Version: "v1alpha1", Resource: "works"}).Namespace(ns).Patch(t.Context(), "nginx-5c9b",
		types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "karmada-controller-manager"}); err != nil {
		t.Fatal(err)
	}

	rep := explain(t, "works."+workGroup+"/nginx-5c9b", "-n", ns)
	if rep.Blocked || rep.Verdict != "Progressing" {
		t.Fatalf("blocked %v, verdict %q, want Progressing; roots:\n%s", rep.Blocked, rep.Verdict, dump(rep.RootBlockers))
	}
	mustContain(t, "evidence", strings.Join(rep.ProgressEvidence, "\n"), "condition Applied=False (Deleting) changed")
}
