/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
)

// cliNoKubeconfig runs the plugin as a user does, without --kubeconfig: the
// environment decides (KUBECONFIG, HOME, in-cluster variables).
func cliNoKubeconfig(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
	flags := genericclioptions.NewConfigFlags(true)
	cacheDir := t.TempDir()
	flags.CacheDir = &cacheDir
	root := newRootCommand(flags, streams)
	root.SetArgs(args)
	root.SetContext(t.Context())
	code := exitCode(root.Execute(), streams)
	return result{out: out.String(), err: errOut.String(), code: code}
}

// TestNoClusterConfigured: with no kubeconfig and not in a pod, every
// command says that no cluster is configured and where it looked (exit 1),
// instead of trying http://localhost:8080 as client-go's fallback does
// ("connection refused" from a server the user never named). With --server
// the same environment reaches that server: the check is not in its way.
func TestNoClusterConfigured(t *testing.T) {
	t.Setenv("KUBECONFIG", "") // restored after the test, whatever the cases set
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	t.Setenv("KUBERNETES_MASTER", "")
	missing := filepath.Join(t.TempDir(), "nonexistent", "config")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	type tc struct {
		kubeconfig string // KUBECONFIG; empty: unset, ~/.kube/config
		args       []string
		want       string
	}
	cases := []tc{
		{missing, []string{"status", "-A"}, "no cluster is configured (KUBECONFIG=" + missing + ": " + missing + " does not exist)"},
		{missing, []string{"explain", "configmap/cfg"}, "no cluster is configured"},
		{missing, []string{"plan", "pod", "web-0"}, "no cluster is configured"},
		{missing, []string{"release", "configmap/cfg", "--finalizer", "example.com/x", "--reason", "r"}, "no cluster is configured"},
		{empty, []string{"status"}, "no cluster is configured (KUBECONFIG=" + empty + ": " + empty + " names no cluster)"},
	}
	// A fresh laptop: no KUBECONFIG and no ~/.kube/config (client-go reads
	// the home folder once, at start; on a machine that has one, the cases
	// above cover the same path).
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err != nil {
		cases = append(cases, tc{"", []string{"status"}, "no cluster is configured (" + clientcmd.RecommendedHomeFile + " does not exist)"})
	}
	for _, c := range cases {
		if c.kubeconfig == "" {
			t.Setenv("KUBECONFIG", "") // restored when the test ends
			_ = os.Unsetenv("KUBECONFIG")
		} else {
			t.Setenv("KUBECONFIG", c.kubeconfig)
		}
		r := cliNoKubeconfig(t, c.args...)
		if r.code != ExitError || !strings.Contains(r.err, c.want) || strings.Contains(r.err, "localhost:8080") {
			t.Errorf("KUBECONFIG=%q %v: exit %d, want %d and %q:\n%s", c.kubeconfig, c.args, r.code, ExitError, c.want, r.err)
		}
		if !strings.Contains(r.err, "name one with --kubeconfig, the KUBECONFIG variable, or --server") {
			t.Errorf("%v: no hint of what to do:\n%s", c.args, r.err)
		}
	}

	// Negative control: --server names a cluster (here one that refuses).
	t.Setenv("KUBECONFIG", missing)
	r := cliNoKubeconfig(t, "status", "--server", fmt.Sprintf("http://127.0.0.1:%d", closedPort(t)))
	if r.code != ExitError || strings.Contains(r.err, "no cluster is configured") || !strings.Contains(r.err, "connection refused") {
		t.Errorf("--server: exit %d, want the server's connection refused:\n%s", r.code, r.err)
	}
}

// A usage error exits 2 with or without a kubeconfig: flags are checked
// before the cluster is looked for. Each case failed with exit 1 ("no
// cluster is configured") before.
func TestUsageErrorsWithoutAKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "nonexistent", "config"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	for _, args := range [][]string{
		{"explain", "configmap/cfg", "-o", "bogus"},
		{"explain", "configmap/cfg", "--gc-stall-after", "0s"},
		{"plan", "pod", "web-0", "--cascade", "sideways"},
		{"status", "--interval", "1ms"},
		{"status", "--watch", "-o", "json"},
		{"release", "configmap/cfg", "--finalizer", "example.com/x", "--reason", "r", "--dry-run=maybe"},
		{"release", "configmap/cfg", "--finalizer", "example.com/x", "--reason", " "},
	} {
		r := cliNoKubeconfig(t, args...)
		if r.code != ExitUsage || strings.Contains(r.err, "no cluster is configured") {
			t.Errorf("%v: exit %d, want %d (usage):\n%s", args, r.code, ExitUsage, r.err)
		}
	}
}
