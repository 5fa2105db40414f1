/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/teardown-dev/teardown/internal/version"
)

// writeKubeconfig writes a kubeconfig for server (the test control plane's
// admin credentials when server is cfg.Host) whose context names namespace.
func writeKubeconfig(t *testing.T, server, namespace string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	if cfg != nil && server == cfg.Host {
		kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	}
	kc.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: namespace}
	kc.CurrentContext = "ctx"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// An unreachable cluster is an error (exit code 1), not a usage error.
func TestUnreachableClusterExitsOne(t *testing.T) {
	kc := writeKubeconfig(t, fmt.Sprintf("https://127.0.0.1:%d", closedPort(t)), "shop")
	for _, args := range [][]string{
		{"explain", "configmap/cfg"},
		{"plan", "pod", "web-0"},
		{"release", "configmap/cfg", "--finalizer", "example.com/x", "--reason", "test"},
		{"status"},
		{"status", "-A", "-o", "json"},
	} {
		r := cli(t, kc, nil, args...)
		if r.code != ExitError || strings.Contains(r.err, "unknown resource type") || !strings.Contains(r.err, "connection refused") {
			t.Errorf("%v: exit %d, want %d: %s", args, r.code, ExitError, r.err)
		}
	}
}

// Flags and arguments are checked before any request: a mistake costs no
// round trip and is a usage error (exit code 2).
func TestUsageCheckedBeforeAnyRequest(t *testing.T) {
	kc := writeKubeconfig(t, fmt.Sprintf("https://127.0.0.1:%d", closedPort(t)), "shop")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"release", "configmap/cfg", "--reason", "r"}, `--finalizer is required`},
		{[]string{"release", "configmap/cfg", "--finalizer", "example.com/x", "--reason", " "}, "--reason is required"},
		{[]string{"release", "configmap/cfg"}, `required flag(s) "reason" not set`},
		{[]string{"explain"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"explain", "configmap/a/b/c", "x"}, "expected TYPE/NAME or TYPE NAME"},
		{[]string{"explain", "configmap/cfg", "-o", "wide"}, `unknown output format "wide"`},
		{[]string{"plan", "configmap/cfg", "--cascade", "sideways"}, "unknown --cascade"},
		{[]string{"status", "extra"}, `unknown command "extra"`},
		{[]string{"status", "-o", "table"}, `unknown output format "table": use wide, json, yaml`},
		{[]string{"status", "-o", "jsonpath"}, "template format specified but no template given"},
		{[]string{"status", "-l", "a in (b"}, "invalid --selector"},
		{[]string{"status", "-w", "-o", "json"}, "--watch prints a table"},
		{[]string{"status", "--all-namespace"}, "unknown flag: --all-namespace"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"version", "-o", "xml"}, `unknown output format "xml"`},
	} {
		log := &requestLog{}
		r := cli(t, kc, log, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.want) {
			t.Errorf("%v: exit %d, want %d and %q: %s", c.args, r.code, ExitUsage, c.want, r.err)
		}
		if len(log.reqs) > 0 {
			t.Errorf("%v: sent %v before refusing", c.args, log.reqs)
		}
	}
}

func TestVersion(t *testing.T) {
	saved := [3]string{version.Version, version.Commit, version.Date}
	t.Cleanup(func() { version.Version, version.Commit, version.Date = saved[0], saved[1], saved[2] })
	version.Version, version.Commit, version.Date = "v0.9.0", "0123abc", "2026-11-22T00:00:00Z"
	kc := writeKubeconfig(t, fmt.Sprintf("https://127.0.0.1:%d", closedPort(t)), "")
	want := "kubectl-teardown v0.9.0 (commit 0123abc, built 2026-11-22T00:00:00Z, "
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if r := cli(t, kc, nil, args...); r.code != ExitOK || !strings.HasPrefix(r.out, want) || strings.Count(r.out, "\n") != 1 {
			t.Errorf("%v: exit %d: %q%s", args, r.code, r.out, r.err)
		}
	}
	r := cli(t, kc, nil, "version", "-o", "json")
	var info version.Info
	if err := json.Unmarshal([]byte(r.out), &info); err != nil || info.Version != "v0.9.0" || info.Commit != "0123abc" || info.GoVersion == "" || info.Platform == "" {
		t.Errorf("version -o json: %v: %s", err, r.out)
	}
	if r := cli(t, kc, nil, "version", "-o", "yaml"); !strings.Contains(r.out, "version: v0.9.0\n") {
		t.Errorf("version -o yaml: %s", r.out)
	}
}

// kubectl (1.26 and later) completes `kubectl teardown ...` by running
// kubectl_complete-teardown from PATH with the words after the plugin's
// name; the script hands them to cobra's __complete.
func TestCompletionScript(t *testing.T) {
	data, err := os.ReadFile("../../cmd/kubectl-teardown/kubectl_complete-teardown")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "#!/usr/bin/env sh\n") || !strings.Contains(string(data), `exec kubectl-teardown __complete "$@"`) {
		t.Errorf("kubectl_complete-teardown:\n%s", data)
	}
	kc := writeKubeconfig(t, fmt.Sprintf("https://127.0.0.1:%d", closedPort(t)), "")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{""}, []string{"explain\t", "plan\t", "release\t", "status\t", "version\t", ":4"}},
		{[]string{"status", "-o", ""}, []string{"wide\n", "name\n", "json\n", "yaml\n", "jsonpath\n", "go-template\n", ":4"}},
		{[]string{"status", "--"}, []string{"--all-namespaces\t", "--selector\t", "--no-headers\t"}},
		{[]string{"release", "configmap/x", "--f"}, []string{"--finalizer\t", "--force\t"}},
		{[]string{"release", "configmap/x", "--"}, []string{"--reason\t"}},
		// Nothing to offer from an unreachable cluster, and no file names.
		{[]string{"explain", ""}, []string{":4"}},
	} {
		r := cli(t, kc, nil, append([]string{"__complete"}, c.args...)...)
		for _, w := range c.want {
			if !strings.Contains(r.out, w) {
				t.Errorf("__complete %q: missing %q in:\n%s", c.args, w, r.out)
			}
		}
	}
}

// status follows the kubeconfig's namespace as kubectl get does; -n picks
// another, -A lists them all and the cluster-scoped kinds, -l filters by
// label; -o name, wide and --no-headers print what kubectl's would.
func TestStatusScopeAndSelector(t *testing.T) {
	needCluster(t)
	here := newNamespace(t)
	there := newNamespace(t)
	labelled := func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"tier": "cache"} }
	configMap(t, here, "here-a", "kubectl-edit", []string{"nobody.teardown.invalid/stale"})
	configMap(t, here, "here-b", "kubectl-edit", []string{"nobody.teardown.invalid/stale"}, labelled)
	configMap(t, there, "there-a", "kubectl-edit", []string{"nobody.teardown.invalid/stale"}, labelled)
	for _, n := range [][2]string{{here, "here-a"}, {here, "here-b"}, {there, "there-a"}} {
		deleteConfigMap(t, n[0], n[1], "")
	}
	node := "status-scope-node"
	if _, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Finalizers: []string{"nobody.teardown.invalid/stale"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().Nodes().Patch(t.Context(), node, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := cs.CoreV1().Nodes().Delete(t.Context(), node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := writeKubeconfig(t, cfg.Host, here)
	names := func(args ...string) []string {
		t.Helper()
		r := cli(t, kc, nil, append([]string{"status", "-o", "json"}, args...)...)
		if r.code != ExitOK {
			t.Fatalf("status %v: exit %d: %s", args, r.code, r.err)
		}
		rep := &StatusReport{}
		if err := json.Unmarshal([]byte(r.out), rep); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range rep.Items {
			if it.Object.Namespace == here || it.Object.Namespace == there || it.Object.Name == node {
				out = append(out, it.Object.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"here-a", "here-b"}},
		{[]string{"-n", there}, []string{"there-a"}},
		{[]string{"-A"}, []string{"here-a", "here-b", node, "there-a"}},
		{[]string{"-A", "-n", there}, []string{"here-a", "here-b", node, "there-a"}},
		{[]string{"-l", "tier=cache"}, []string{"here-b"}},
		{[]string{"-A", "--selector", "tier=cache"}, []string{"here-b", "there-a"}},
		{[]string{"-A", "-l", "tier!=cache"}, []string{"here-a", node}},
	} {
		if got := names(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("status %v = %v, want %v", c.args, got, c.want)
		}
	}
	if r := cli(t, kc, nil, "status", "-o", "name"); r.code != ExitOK || r.out != "configmap/here-a\nconfigmap/here-b\n" {
		t.Errorf("status -o name: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r := cli(t, kc, nil, "status", "--no-headers", "-o", "wide", "-l", "tier=cache")
	if fields := strings.Fields(r.out); r.code != ExitOK || len(fields) < 5 || fields[0] != "ConfigMap" || fields[1] != "here-b" ||
		fields[len(fields)-2] != "nobody.teardown.invalid/stale" || fields[len(fields)-1] != "v1" || strings.Count(r.out, "\n") != 1 {
		t.Errorf("status --no-headers -o wide: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if r := cli(t, kc, nil, "status", "-l", "tier=none"); r.code != ExitOK || r.out != "" || r.err != "Nothing is terminating in namespace "+here+".\n" {
		t.Errorf("status with nothing: exit %d\nstdout %q\nstderr %q", r.code, r.out, r.err)
	}
	// TYPE/NAME completion reads the same namespace.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "configm"}, "configmaps\n"},
		{[]string{"explain", "teardownpol"}, "teardownpolicies.teardown.dev\n"},
		{[]string{"explain", "configmap/here"}, "configmap/here-a\nconfigmap/here-b\n:4\n"},
		{[]string{"plan", "cm", "here-"}, "here-a\nhere-b\n:4\n"},
		{[]string{"release", "-n", there, "configmaps", "there"}, "there-a\n:4\n"},
		{[]string{"status", "-n", there[:len(there)-1]}, there + "\n"},
	} {
		r := cli(t, kc, nil, append([]string{"__complete"}, c.args...)...)
		if !strings.Contains(r.out, c.want) {
			t.Errorf("__complete %q = %q, want %q", c.args, r.out, c.want)
		}
	}
}
