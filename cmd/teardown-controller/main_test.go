/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain runs main when the test binary is started again by a test below,
// so that main's exit code and output are what is checked.
func TestMain(m *testing.M) {
	if os.Getenv("TEARDOWN_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runMain runs the controller's main with args and no cluster configured
// (an unreachable kubeconfig), and returns its exit code and output.
func runMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://192.0.2.1:6443"}}]
contexts: [{name: c, context: {cluster: c}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "TEARDOWN_RUN_MAIN=1", "KUBECONFIG="+kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("teardown-controller %v was still running after 10s (it started a controller):\n%s", args, out.String())
		return 0, ""
	}
}

// TestStrayArgumentsStartNoController: a typo of a command, or any argument
// the controller does not take, exits 2 at once with a message naming the
// commands, before any cluster is contacted; version prints the version.
func TestStrayArgumentsStartNoController(t *testing.T) {
	for _, args := range [][]string{{"unistall"}, {"--leader-elect", "run"}, {"version", "extra"}} {
		code, out := runMain(t, args...)
		if code != 2 || !strings.Contains(out, "the commands are uninstall, check and version") {
			t.Errorf("teardown-controller %v: exit %d, output:\n%s", args, code, out)
		}
	}
	if code, out := runMain(t, "version"); code != 0 || !strings.Contains(out, "commit") {
		t.Errorf("teardown-controller version: exit %d, output:\n%s", code, out)
	}
	if code, out := runMain(t, "--help"); !strings.Contains(out, "teardown-controller uninstall [flags]") {
		t.Errorf("teardown-controller --help: exit %d, output does not list the commands:\n%s", code, out)
	}
}
