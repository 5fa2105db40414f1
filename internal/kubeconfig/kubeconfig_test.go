/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kubeconfig_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/teardown-dev/teardown/internal/installcheck"
	"github.com/teardown-dev/teardown/internal/kubeconfig"
	"github.com/teardown-dev/teardown/internal/uninstall"
)

// TestNoClusterConfigured: every command that connects says that no
// cluster is configured, and where it looked, instead of client-go's
// "try setting KUBERNETES_MASTER" or a refused connection to localhost:8080
// (the ecosystem review, 2026-11-28, §1); a kubeconfig that names a cluster
// passes.
func TestNoClusterConfigured(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_MASTER", "")
	t.Setenv("HOME", dir)

	t.Setenv("KUBECONFIG", missing)
	err := kubeconfig.CheckConfigured(kubeconfig.Loader(""), "", "")
	if want := "no cluster is configured (KUBECONFIG=" + missing + ": " + missing + " does not exist)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("KUBECONFIG naming a missing file: %v, want %q", err, want)
	}
	if err := kubeconfig.CheckConfigured(kubeconfig.Loader(""), "https://127.0.0.1:1", ""); err != nil {
		t.Errorf("with a server given: %v", err)
	}
	if err := kubeconfig.CheckConfigured(kubeconfig.Loader(good), "", good); err != nil {
		t.Errorf("--kubeconfig naming a cluster: %v", err)
	}
	for name, main := range map[string]func([]string, *bytes.Buffer, *bytes.Buffer) int{
		"teardown-controller uninstall": func(a []string, o, e *bytes.Buffer) int { return uninstall.Main(a, o, e) },
		"teardown-controller check":     func(a []string, o, e *bytes.Buffer) int { return installcheck.Main(a, o, e) },
	} {
		var stdout, stderr bytes.Buffer
		if code := main(nil, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "no cluster is configured (KUBECONFIG="+missing) {
			t.Errorf("%s with no cluster: exit %d, %q; want 1 and that no cluster is configured", name, code, stderr.String())
		}
	}
}
