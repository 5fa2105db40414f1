/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// Each scenario reproduces one catalogued cause (research/stuck-termination.md
// §2) on the real control plane and asserts the cause and remedy that
// `explain -o json` reports.

// A1: an unavailable aggregated APIService blocks every namespace deletion.
func TestExplainAPIServiceUnavailable(t *testing.T) {
	needCluster(t)
	api := apiService(t, "metrics-a1.teardown.test", "default", "no-such-service")
	ns := newNamespace(t)
	deleteNamespace(t, ns)
	namespaceCondition(t, ns, "NamespaceDeletionDiscoveryFailure")
	rep, f := explainUntil(t, 30*time.Second, diagnose.CauseAPIServiceUnavailable, api, "namespace/"+ns)
	assertRemedy(t, f, "kubectl delete apiservice "+api)
	if plugintest.Find(rep, diagnose.CauseDiscoveryFailed, ns) == nil {
		t.Errorf("no DiscoveryFailed finding for the namespace condition")
	}
	if plugintest.Root(rep, diagnose.CauseAPIServiceUnavailable, api) == nil {
		t.Errorf("the APIService is not a root blocker: %+v", rep.RootBlockers)
	}
}

// A2: the APIService's backend lives in the namespace being deleted.
func TestExplainAPIServiceBackendInNamespace(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	emptyService(t, ns, "metrics-api")
	api := apiService(t, "metrics-a2.teardown.test", ns, "metrics-api")
	deleteNamespace(t, ns)
	_, f := explainUntil(t, 60*time.Second, diagnose.CauseAPIServiceBackendInNamespace, api, "namespace/"+ns)
	assertRemedy(t, f, "delete the APIService")
	if f.Catalog != "A2" {
		t.Errorf("catalog = %q, want A2", f.Catalog)
	}
}

// A5: a webhook intercepting DELETE with a dead backend.
func TestExplainWebhookBlocksDelete(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	configMap(t, ns, "victim", "kubectl-create", nil)
	url := fmt.Sprintf("https://127.0.0.1:%d/validate", closedPort(t))
	validatingWebhook(t, "dead-delete-hook", url, nil, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
		&metav1.LabelSelector{MatchLabels: map[string]string{"teardown-test": ns}}, nil)
	deleteNamespace(t, ns)
	namespaceCondition(t, ns, "NamespaceDeletionContentFailure")
	rep, f := explainUntil(t, 30*time.Second, diagnose.CauseWebhookBlocksDelete, "dead-delete-hook", "namespace/"+ns)
	assertRemedy(t, f, "validatingwebhookconfiguration dead-delete-hook")
	if plugintest.Find(rep, diagnose.CauseContentDeletionFailed, ns) == nil {
		t.Errorf("no ContentDeletionFailed finding")
	}
}

// A6 and A7: content remaining with finalizers and without (a pod on a
// NotReady node, D2).
func TestExplainContentRemaining(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	node := "node-" + ns
	plugintest.NotReadyNode(t, cs, node)
	boundPod(t, ns, "web-0", node, nil)
	configMap(t, ns, "held", "kubectl-create", []string{"example.com/held"})
	deleteNamespace(t, ns)
	rep, pod := explainUntil(t, 60*time.Second, diagnose.CausePodOnNotReadyNode, "web-0", "namespace/"+ns)
	assertRemedy(t, pod, "node.kubernetes.io/out-of-service")
	if f := plugintest.Find(rep, diagnose.CauseContentWithoutFinalizers, "web-0"); f == nil || f.Catalog != "A7" {
		t.Errorf("the pod is not reported as content remaining without finalizers: %+v", f)
	}
	if plugintest.Root(rep, diagnose.CausePodOnNotReadyNode, "web-0") == nil {
		t.Errorf("the pod on the NotReady node is not a root blocker: %+v", rep.RootBlockers)
	}
	// Once the pod is gone, the rest of the content is deleted and the
	// ConfigMap holds on its finalizer.
	if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "web-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	namespaceCondition(t, ns, "NamespaceFinalizersRemaining")
	rep, cm := explainUntil(t, 60*time.Second, diagnose.CauseContentWithFinalizers, "held", "namespace/"+ns)
	if cm.Catalog != "A6" || len(cm.Children) == 0 || cm.Children[0].Finalizer != "example.com/held" {
		t.Errorf("content with finalizers = %+v", cm)
	}
	if plugintest.Root(rep, diagnose.CauseOrphanFinalizer, "held") == nil {
		t.Errorf("the ConfigMap's orphan finalizer is not the root blocker: %+v", rep.RootBlockers)
	}
}

// A8: the operator lives in the namespace it must clean.
func TestExplainOperatorInNamespace(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	node := "node-" + ns
	plugintest.NotReadyNode(t, cs, node)
	boundPod(t, ns, "widget-operator-0", node, map[string]string{"app.kubernetes.io/name": "widget-operator"})
	configMap(t, ns, "widget-state", "widget-operator", []string{"widgets.teardown.test/cleanup"})
	deleteConfigMap(t, ns, "widget-state", "")
	deleteNamespace(t, ns)
	_, f := explainUntil(t, 60*time.Second, diagnose.CauseOwnerInTerminatingNamespace, "widget-state", "namespace/"+ns)
	assertRemedy(t, f, "from another namespace")
	if f.Owner == nil || f.Owner.Manager != "widget-operator" || f.Owner.Workload == nil || f.Owner.Workload.Name != "widget-operator-0" {
		t.Errorf("owner = %+v, want the widget-operator pod found through managedFields", f.Owner)
	}
}

// A9: metadata finalizers on the Namespace object.
func TestExplainNamespaceMetadataFinalizer(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t, func(n *corev1.Namespace) { n.Finalizers = []string{"controller.cattle.io/namespace-auth"} })
	t.Cleanup(func() {
		_, _ = cs.CoreV1().Namespaces().Patch(context.Background(), ns, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	deleteNamespace(t, ns)
	testenv.Eventually(t, 60*time.Second, "spec finalizers cleared", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil && len(n.Spec.Finalizers) == 0, err
	})
	rep := explainJSON(t, "namespace/"+ns)
	// Nothing of Rancher is installed here (issue 17: platforms.go).
	f := plugintest.Find(rep, diagnose.CausePlatformAbsent, ns)
	if f == nil || f.Catalog != "A9" || f.Finalizer != "controller.cattle.io/namespace-auth" || f.Location != "metadata" {
		t.Fatalf("no A9 finding for the Rancher finalizer: %+v", rep.Findings)
	}
	if f.Owner == nil || f.Owner.Component != "Rancher" || f.Owner.State != diagnose.OwnerMissing {
		t.Errorf("owner = %+v, want Rancher, missing", f.Owner)
	}
	assertRemedy(t, f, "rancher-cleanup")
}

// A10: a foreign token in a namespace's spec.finalizers, then released
// through /finalize.
func TestExplainForeignSpecFinalizer(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t, func(n *corev1.Namespace) {
		n.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes, "openshift.io/origin"}
	})
	deleteNamespace(t, ns)
	testenv.Eventually(t, 60*time.Second, "the kubernetes token to go", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil && len(n.Spec.Finalizers) == 1, err
	})
	rep := explainJSON(t, "namespace/"+ns)
	f := plugintest.Find(rep, diagnose.CauseForeignSpecFinalizer, ns)
	if f == nil || f.Finalizer != "openshift.io/origin" || f.Location != "spec" {
		t.Fatalf("no ForeignSpecFinalizer finding: %+v", rep.Findings)
	}
	assertRemedy(t, f, "/finalize")

	// release goes through /finalize and the namespace disappears.
	r := cli(t, "", nil, "release", "namespace/"+ns, "--finalizer", "openshift.io/origin", "--reason", "OpenShift 3 leftover", "--yes", "--audit-log", t.TempDir()+"/audit.jsonl")
	if r.code != ExitOK {
		t.Fatalf("release: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	testenv.Eventually(t, 30*time.Second, "the namespace to go", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return ignoreNotFound(err) == nil && err != nil, nil
	})
}

// B1: the finalizer's owning controller is gone (scaled to zero).
func TestExplainOwnerGone(t *testing.T) {
	needCluster(t)
	ops := newNamespace(t)
	dep := deployment(ops, "bucket-operator", 1)
	if _, err := cs.AppsV1().Deployments(ops).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	configMap(t, ns, "bucket", "bucket-operator", []string{"buckets.teardown.test/cleanup"})
	deleteConfigMap(t, ns, "bucket", "")
	rep := explainJSON(t, "configmap/bucket", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseOwnerGone, "bucket")
	if f == nil {
		t.Fatalf("no FinalizerOwnerGone: %+v", rep.Findings)
	}
	if f.Owner.State != diagnose.OwnerDown || f.Owner.Workload == nil || f.Owner.Workload.Name != "bucket-operator" {
		t.Errorf("owner = %+v, want the bucket-operator Deployment, down", f.Owner)
	}
	assertRemedy(t, f, "reinstall or restart bucket-operator")
	if f.Removal == nil || !f.Removal.Allowed {
		t.Errorf("removal dry-run = %+v, want allowed", f.Removal)
	}
}

// B3: a webhook rejects the finalizer removal patch.
func TestExplainRemovalRejected(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	url, ca := rejectingWebhook(t, "frozen by policy: no updates")
	validatingWebhook(t, "reject-updates", url, ca, []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		nil, &metav1.LabelSelector{MatchLabels: map[string]string{"teardown-test/frozen": ns}})
	configMap(t, ns, "frozen", "kubectl-create", []string{"example.com/frozen"}, func(cm *corev1.ConfigMap) {
		cm.Labels = map[string]string{"teardown-test/frozen": ns}
	})
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), "reject-updates", metav1.DeleteOptions{})
		time.Sleep(2 * time.Second)
		plugintest.DropFinalizers(cs, ns, "frozen")
	})
	waitRejected(t, ns, "frozen")
	deleteConfigMap(t, ns, "frozen", "")
	rep := explainJSON(t, "configmap/frozen", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseRemovalRejected, "frozen")
	if f == nil || !contains(f.Message, "frozen by policy") {
		t.Fatalf("no RemovalRejected with the webhook's message: %+v", rep.Findings)
	}
	if plugintest.Root(rep, diagnose.CauseRemovalRejected, "frozen") == nil {
		t.Errorf("the rejection is not the root blocker: %+v", rep.RootBlockers)
	}
	// release refuses to write what the server would reject.
	r := cli(t, "", nil, "release", "configmap/frozen", "-n", ns, "--finalizer", "example.com/frozen", "--reason", "test", "--yes", "--audit-log", t.TempDir()+"/a.jsonl")
	if r.code != ExitError || !contains(r.out, "rejected") {
		t.Errorf("release of a rejected removal: exit %d\n%s", r.code, r.out)
	}
}

// B5: an orphan finalizer nobody owns.
func TestExplainOrphanFinalizer(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	configMap(t, ns, "typo", "kubectl-edit", []string{"nobody.teardown.invalid/stale"})
	deleteConfigMap(t, ns, "typo", "")
	rep := explainJSON(t, "configmap/typo", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseOrphanFinalizer, "typo")
	if f == nil || f.Catalog != "B5" {
		t.Fatalf("no OrphanFinalizer: %+v", rep.Findings)
	}
	assertRemedy(t, f, "kubectl teardown release configmaps/typo -n "+ns+" --finalizer nobody.teardown.invalid/stale")
	if !rep.Blocked || plugintest.Root(rep, diagnose.CauseOrphanFinalizer, "typo") == nil {
		t.Errorf("blocked=%v roots=%+v", rep.Blocked, rep.RootBlockers)
	}
}

// E1: foreground deletion waits on a stuck dependent; the chain goes down to
// the dependent's orphan finalizer.
func TestExplainForegroundChain(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	root := configMap(t, ns, "root", "kubectl-create", nil)
	configMap(t, ns, "child", "kubectl-create", []string{"example.com/child-hold"}, func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "root", UID: root.UID, BlockOwnerDeletion: ptr.To(true)}}
	})
	deleteConfigMap(t, ns, "root", metav1.DeletePropagationForeground)
	testenv.Eventually(t, 30*time.Second, "the child to be deleted by the GC", func(ctx context.Context) (bool, error) {
		c, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "child", metav1.GetOptions{})
		return err == nil && c.DeletionTimestamp != nil, err
	})
	rep := explainJSON(t, "configmap/root", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseForegroundDependents, "root")
	if f == nil || f.Catalog != "E1" {
		t.Fatalf("no ForegroundWaitingOnDependents: %+v", rep.Findings)
	}
	if plugintest.Find(rep, "BlockingDependent", "child") == nil {
		t.Errorf("the child is not shown as the blocking dependent")
	}
	if plugintest.Root(rep, diagnose.CauseOrphanFinalizer, "child") == nil {
		t.Errorf("root blockers = %+v, want the child's orphan finalizer", rep.RootBlockers)
	}
	assertRemedy(t, f, "propagationPolicy=Background")
}

// E3: an orphan finalizer whose dependent cannot be patched.
func TestExplainOrphanDependentUnpatchable(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	url, ca := rejectingWebhook(t, "dependents are frozen")
	owner := configMap(t, ns, "owner", "kubectl-create", nil)
	configMap(t, ns, "dependent", "kubectl-create", nil, func(cm *corev1.ConfigMap) {
		cm.Labels = map[string]string{"teardown-test/frozen-dep": ns}
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}
	})
	validatingWebhook(t, "freeze-dependents", url, ca, []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		nil, &metav1.LabelSelector{MatchLabels: map[string]string{"teardown-test/frozen-dep": ns}})
	waitRejected(t, ns, "dependent")
	deleteConfigMap(t, ns, "owner", metav1.DeletePropagationOrphan)
	rep := explainJSON(t, "configmap/owner", "-n", ns)
	f := plugintest.Find(rep, diagnose.CauseOrphanDependentUnpatchable, "dependent")
	if f == nil || f.Catalog != "E3" || !contains(f.Message, "dependents are frozen") {
		t.Fatalf("no OrphanDependentUnpatchable: %+v", rep.Findings)
	}
	assertRemedy(t, f, "fix the webhook")
	// Let the GC finish once the webhook is gone.
	_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(t.Context(), "freeze-dependents", metav1.DeleteOptions{})
}

// E4: dangling and cross-namespace owner references.
func TestExplainOwnerReferences(t *testing.T) {
	needCluster(t)
	a := newNamespace(t)
	b := newNamespace(t)
	owner := configMap(t, a, "owner", "kubectl-create", nil)
	configMap(t, b, "cross", "kubectl-create", []string{"example.com/keep"}, func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}
	})
	configMap(t, b, "dangling", "kubectl-create", []string{"example.com/keep"}, func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "00000000-0000-0000-0000-000000000001"}}
	})
	rep := explainJSON(t, "configmap/cross", "-n", b)
	f := plugintest.Find(rep, diagnose.CauseCrossNamespaceOwnerReference, "cross")
	if f == nil || !contains(f.Message, a) {
		t.Fatalf("no CrossNamespaceOwnerReference naming %s: %+v", a, rep.Findings)
	}
	assertRemedy(t, f, "cannot cross namespaces")
	rep = explainJSON(t, "configmap/dangling", "-n", b)
	if f := plugintest.Find(rep, diagnose.CauseDanglingOwnerReference, "dangling"); f == nil {
		t.Fatalf("no DanglingOwnerReference: %+v", rep.Findings)
	}
}

// C9: a CRD stuck on its instances; release refuses its finalizer.
func TestExplainCRDStuckOnInstances(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	dyn := dynamic.NewForConfigOrDie(cfg)
	group := "c9.teardown.test"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	gadget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1", "namespace": ns, "finalizers": []any{"gadgets.c9.teardown.test/cleanup"}}}}
	testenv.Eventually(t, 30*time.Second, "the CRD to serve", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, gadget, metav1.CreateOptions{FieldManager: "kubectl-create"})
		return err == nil, nil
	})
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), "g1", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).Delete(t.Context(), "gadgets."+group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, f := explainUntil(t, 30*time.Second, diagnose.CauseCRDInstancesRemain, "gadgets."+group, "crd/gadgets."+group)
	if !contains(f.Leaks, "come back when the CRD is reinstalled") || plugintest.Find(rep, "BlockingDependent", "g1") == nil {
		t.Errorf("CRD finding = %+v", f)
	}
	if plugintest.Root(rep, diagnose.CauseOwnerUnknown, "g1") == nil && plugintest.Root(rep, diagnose.CauseOrphanFinalizer, "g1") == nil {
		t.Errorf("root blockers = %+v, want the gadget's finalizer", rep.RootBlockers)
	}
	r := cli(t, "", nil, "release", "crd/gadgets."+group, "--finalizer", "customresourcecleanup.apiextensions.k8s.io", "--reason", "test", "--yes", "--audit-log", t.TempDir()+"/a.jsonl")
	if r.code != ExitError || !contains(r.err, "refusing") || !contains(r.out, "will orphan: Gadget "+ns+"/g1") {
		t.Errorf("release of the CRD finalizer: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
}
