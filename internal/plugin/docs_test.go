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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	notReadyNode(t, "node-1")
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

	dir := filepath.Join("testdata", "docs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	record := func(file string, args ...string) result {
		r := cli(t, "", nil, args...)
		var b bytes.Buffer
		b.WriteString("$ kubectl teardown " + strings.Join(args, " ") + "\n")
		b.WriteString(r.out)
		b.WriteString(r.err)
		if r.code != 0 {
			b.WriteString("(exit code " + string(rune('0'+r.code)) + ")\n")
		}
		if err := os.WriteFile(filepath.Join(dir, file), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return r
	}
	record("plan-foreground.txt", "plan", "configmap/frontend", "-n", "web", "--cascade", "foreground")
	record("plan-namespace.txt", "plan", "namespace/shop")
	deleteConfigMap(t, "shop", "bucket", "")
	deleteConfigMap(t, "shop", "typo", "")
	deleteNamespace(t, "shop")
	deleteConfigMap(t, "web", "frontend", metav1.DeletePropagationForeground)
	namespaceCondition(t, "shop", "NamespaceDeletionDiscoveryFailure")
	time.Sleep(3 * time.Second)
	record("explain-namespace.txt", "explain", "namespace/shop")
	record("explain-configmap.txt", "explain", "configmap/bucket", "-n", "shop")
	record("explain-foreground.txt", "explain", "configmap/frontend", "-n", "web")
	js := record("explain-configmap.json.txt", "explain", "configmap/bucket", "-n", "shop", "-o", "json")
	record("status.txt", "status")
	record("release-dry-run.txt", "release", "configmap/typo", "-n", "shop", "--finalizer", "nobody.example.org/stale", "--reason", "typo in a manifest")
	record("release-refused.txt", "release", "namespace/shop", "--finalizer", "kubernetes", "--reason", "folklore says so", "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	record("release-yes.txt", "release", "configmap/typo", "-n", "shop", "--finalizer", "nobody.example.org/stale", "--reason", "typo in a manifest", "--yes", "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	if *update {
		for name, args := range map[string][]string{
			"explain_namespace.json":  {"explain", "namespace/shop", "-o", "json"},
			"explain_foreground.json": {"explain", "configmap/frontend", "-n", "web", "-o", "json"},
		} {
			r := cli(t, "", nil, args...)
			if err := os.WriteFile(filepath.Join("testdata", name), []byte(r.out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join("testdata", "explain_configmap.json"), []byte(js.out), 0o644); err != nil {
			t.Fatal(err)
		}
		var st bytes.Buffer
		r := cli(t, "", nil, "status", "-o", "json")
		st.WriteString(r.out)
		if err := os.WriteFile(filepath.Join("testdata", "status.json"), st.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = json.Valid
}
