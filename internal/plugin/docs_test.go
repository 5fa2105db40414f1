/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var docs = flag.Bool("docs", false, "run the documentation scenario and write its real output to testdata/docs (and the golden fixtures)")

// TestDocsScenario builds the cluster state docs/cli.md shows and records
// the commands' real output. Run with: go test ./internal/plugin -run TestDocsScenario -docs -update
func TestDocsScenario(t *testing.T) {
	if !*docs {
		t.Skip("run with -docs")
	}
	needCluster(t)
	ctx := t.Context()
	mk := func(name string) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("ops")
	mk("shop")
	mk("web")
	if _, err := cs.AppsV1().Deployments("ops").Create(ctx, deployment("ops", "bucket-operator", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	plugintest.NotReadyNode(t, cs, "node-1")
	boundPod(t, "shop", "web-0", "node-1", nil)
	configMap(t, "shop", "bucket", "bucket-operator", []string{"buckets.example.com/cleanup"})
	configMap(t, "shop", "typo", "kubectl-edit", []string{"nobody.example.org/stale"})
	apiService(t, "metrics.example.com", "monitoring", "metrics-api")
	root := configMap(t, "web", "frontend", "kubectl-create", nil)
	configMap(t, "web", "frontend-config", "kubectl-create", []string{"example.com/hold"}, func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "frontend", UID: root.UID, BlockOwnerDeletion: ptr.To(true)}}
	})
	configMap(t, "web", "frontend-cache", "kubectl-create", nil, func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "frontend", UID: root.UID}}
	})
	// B4: a running operator whose ServiceAccount may not write what it
	// must finalize.
	mk("gadgets")
	runningDeployment(t, "ops", "gadget-operator", "gadget-operator")
	configMap(t, "gadgets", "gadget-1", "gadget-operator", []string{"gadgets.example.com/cleanup"})
	// C7: a LoadBalancer Service with no cloud-controller-manager left.
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "storefront", Namespace: "web", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}, Selector: map[string]string{"app": "storefront"}}}
	lb, err := cs.CoreV1().Services("web").Create(ctx, lb, metav1.CreateOptions{FieldManager: "cloud-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.10"}}
	if _, err := cs.CoreV1().Services("web").UpdateStatus(ctx, lb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// C8: a finished Job pod whose Job the Job controller never synced.
	mk("batch")
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-report", Namespace: "batch"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/report"}}}}}}
	if job, err = cs.BatchV1().Jobs("batch").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nightly-report-x7k2p", Namespace: "batch", Labels: job.Spec.Template.Labels,
		Finalizers:      []string{"batch.kubernetes.io/job-tracking"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/report"}}}}
	if jobPod, err = cs.CoreV1().Pods("batch").Create(ctx, jobPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobPod.Status.Phase = corev1.PodSucceeded
	if _, err := cs.CoreV1().Pods("batch").UpdateStatus(ctx, jobPod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// D5: a Node Karpenter (alive) cannot drain past a PodDisruptionBudget.
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2", Finalizers: []string{"karpenter.sh/termination"}}}, metav1.CreateOptions{FieldManager: "karpenter"}); err != nil {
		t.Fatal(err)
	}
	freshLease(t, "ops", "karpenter-leader-election", "karpenter-6d8f9c-x2k4q")
	boundPod(t, "web", "db-0", "node-2", map[string]string{"app": "db"})
	pdb, err := cs.PolicyV1().PodDisruptionBudgets("web").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("web").UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	record := func(file string, args ...string) result {
		r := cli(t, "", nil, args...)
		plugintest.WriteTranscript(t, file, plugintest.Result{Out: r.out, Err: r.err, Code: r.code}, args...)
		return r
	}
	record("plan-foreground.txt", "plan", "configmap/frontend", "-n", "web", "--cascade", "foreground")
	record("plan-namespace.txt", "plan", "namespace/shop")
	deleteConfigMap(t, "shop", "bucket", "")
	deleteConfigMap(t, "shop", "typo", "")
	deleteNamespace(t, "shop")
	deleteConfigMap(t, "web", "frontend", metav1.DeletePropagationForeground)
	deleteConfigMap(t, "gadgets", "gadget-1", "")
	for _, del := range []func() error{
		func() error { return cs.CoreV1().Services("web").Delete(ctx, "storefront", metav1.DeleteOptions{}) },
		func() error {
			return cs.CoreV1().Pods("batch").Delete(ctx, "nightly-report-x7k2p", metav1.DeleteOptions{})
		},
		func() error { return cs.CoreV1().Nodes().Delete(ctx, "node-2", metav1.DeleteOptions{}) },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}
	namespaceCondition(t, "shop", "NamespaceDeletionDiscoveryFailure")
	time.Sleep(3 * time.Second)
	record("explain-namespace.txt", "explain", "namespace/shop")
	record("explain-configmap.txt", "explain", "configmap/bucket", "-n", "shop")
	record("explain-foreground.txt", "explain", "configmap/frontend", "-n", "web")
	js := record("explain-configmap.json.txt", "explain", "configmap/bucket", "-n", "shop", "-o", "json")
	record("status.txt", "status", "-A")
	record("status-stuck.txt", "status", "-n", "web", "--stuck-after", "2s")
	record("status-namespace.txt", "status", "-n", "shop")
	record("status-exit-blocked.txt", "status", "-n", "web", "--exit-blocked")
	record("status-wide.txt", "status", "-n", "web", "-o", "wide", "--no-headers")
	record("status-name.txt", "status", "-A", "-o", "name")
	record("status-jsonpath.txt", "status", "-A", "-o", `jsonpath={range .items[*]}{.object.kind}/{.object.name}{"\t"}{.terminatingFor}{"\n"}{end}`)
	record("complete-name.txt", "__complete", "explain", "-n", "web", "configmap/fr")
	record("explain-jsonpath.txt", "explain", "namespace/shop", "-o", `jsonpath={range .rootBlockers[*]}{.cause}{"\t"}{.object.kind}/{.object.name}{"\n"}{end}`)
	record("explain-rbac.txt", "explain", "configmap/gadget-1", "-n", "gadgets")
	record("explain-loadbalancer.txt", "explain", "service/storefront", "-n", "web")
	record("explain-job-pod.txt", "explain", "pod/nightly-report-x7k2p", "-n", "batch")
	record("explain-node.txt", "explain", "node/node-2")
	record("release-dry-run.txt", "release", "configmap/typo", "-n", "shop", "--finalizer", "nobody.example.org/stale", "--reason", "typo in a manifest")
	record("release-refused.txt", "release", "namespace/shop", "--finalizer", "kubernetes", "--reason", "folklore says so", "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	record("release-yes.txt", "release", "configmap/typo", "-n", "shop", "--finalizer", "nobody.example.org/stale", "--reason", "typo in a manifest", "--yes", "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	if *update {
		for name, args := range map[string][]string{
			"explain_namespace.json":  {"explain", "namespace/shop", "-o", "json"},
			"explain_foreground.json": {"explain", "configmap/frontend", "-n", "web", "-o", "json"},
		} {
			r := cli(t, "", nil, args...)
			writeFixture(t, name, r.out)
		}
		writeFixture(t, "explain_configmap.json", js.out)
		r := cli(t, "", nil, "status", "-A", "-o", "json")
		writeFixture(t, "status.json", r.out)
	}
}

// writeFixture writes a recorded JSON output to testdata, indented as
// encoding/json does (the fixtures' round trip compares with that).
func writeFixture(t *testing.T, name, out string) {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(strings.TrimSpace(out)), "", "  "); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	b.WriteString("\n")
	if err := os.WriteFile(filepath.Join("testdata", name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
