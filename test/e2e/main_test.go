//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package e2e runs Teardown in a real one-node cluster on this machine
// (hack/cluster: kubelet, containerd, runc, kube-proxy, a bridge CNI, a local
// registry): `make release` publishes a release to that registry, and the
// tests install it as a user would: signatures checked, the chart by
// version from the registry, the image by the digest it pins, the plugin
// from the archive the krew manifest names. `make e2e` runs it; the build tag keeps it out of `go test
// ./...` (make test), since it needs root, the node's binaries and minutes.
// Nothing here skips: a missing part fails the run with what to do.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	root       string // the main module's root
	kubeconfig string
	registry   string // localhost:PORT, pushed the controller and test images
	clusterDir string // the cluster's folder (containerd's socket)
	binDir     string // the plugin, installed from the release's archive
	pathEnv    string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root = filepath.Dir(filepath.Dir(wd))
	stop, err := startCluster()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the cluster: %v\n", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stopping the cluster: %v\n", err)
			code = 1
		}
	}()
	return m.Run()
}

// startCluster builds and starts hack/cluster and waits for its env file;
// the returned func stops it (SIGTERM: it removes everything it made) and
// reports whether its stop left something.
func startCluster() (func() error, error) {
	for _, need := range []struct{ path, how string }{
		{filepath.Join(root, "bin/helm"), "make helm"},
		{filepath.Join(root, "bin/k8s/kubelet"), "make node"},
		{filepath.Join(root, "bin/image/teardown-controller/index.json"), "make image"},
		{filepath.Join(root, "bin/image/teardown-controller.digest"), "make image"},
	} {
		if _, err := os.Stat(need.path); err != nil {
			return nil, fmt.Errorf("%s is missing: run %s (make e2e does)", need.path, need.how)
		}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the node needs root (kubelet, containerd, iptables, mounts)")
	}
	tmp, err := os.MkdirTemp("", "teardown-e2e-")
	if err != nil {
		return nil, err
	}
	binDir = filepath.Join(tmp, "bin")
	logs := filepath.Join(root, "bin", "e2e")
	_ = os.RemoveAll(logs)
	for _, b := range [][]string{
		{"go", "-C", filepath.Join(root, "hack/cluster"), "build", "-o", filepath.Join(binDir, "cluster"), "."},
	} {
		if out, err := exec.Command(b[0], b[1:]...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", strings.Join(b, " "), err, out)
		}
	}
	dir := filepath.Join(tmp, "cluster")
	cmd := exec.Command(filepath.Join(binDir, "cluster"), "-repo", root, "-dir", dir, "-logs", logs)
	logFile, err := os.Create(filepath.Join(tmp, "cluster.out"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-exited:
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			err = errors.Join(errors.New("the cluster did not stop within 3m"), <-exited)
		}
		logFile.Close()
		out, _ := os.ReadFile(logFile.Name())
		fmt.Fprintf(os.Stderr, "e2e: cluster output (logs in %s):\n%s", logs, out)
		if err == nil {
			err = os.RemoveAll(tmp)
		}
		return err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		data, err := os.ReadFile(filepath.Join(dir, "env"))
		if err == nil {
			env := map[string]string{}
			s := bufio.NewScanner(bytes.NewReader(data))
			for s.Scan() {
				if k, v, ok := strings.Cut(s.Text(), "="); ok {
					env[k] = v
				}
			}
			kubeconfig, registry, clusterDir = env["KUBECONFIG"], env["REGISTRY"], env["DIR"]
			fmt.Fprintf(os.Stderr, "e2e: cluster up in %s (registry %s)\n", time.Since(start).Round(100*time.Millisecond), registry)
			break
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logFile.Name())
			return nil, fmt.Errorf("the cluster exited: %w\n%s", err, out)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = stop()
			return nil, errors.New("the cluster was not up within 10m")
		}
	}
	pathEnv = strings.Join([]string{binDir, filepath.Join(root, "bin"), filepath.Join(root, "bin/k8s"), os.Getenv("PATH")}, string(os.PathListSeparator))
	// The release the tests install: published to the cluster's registry,
	// its signatures checked, the plugin installed from its archive.
	if err := publishRelease(tmp); err != nil {
		_ = stop()
		return nil, fmt.Errorf("make release: %w", err)
	}
	if err := verifyRelease(); err != nil {
		_ = stop()
		return nil, fmt.Errorf("checking the release's signatures: %w", err)
	}
	return stop, nil
}

// environ is the environment commands run with: the cluster's kubeconfig;
// the release to install, as the README's quick start names it (REGISTRY,
// VERSION, its public key COSIGN_PUB); and first on PATH the plugin
// installed from the release, then bin/ (helm, kubectl).
func environ() []string {
	return append(os.Environ(), "KUBECONFIG="+kubeconfig, "REGISTRY="+registry, "VERSION="+releaseVersion,
		"COSIGN_PUB="+filepath.Join(releaseDir, "cosign.pub"), "PATH="+pathEnv)
}

// sh runs a command line with bash from the repository's root and returns
// its stdout and stderr together.
func sh(ctx context.Context, line string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = root, environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectl runs kubectl and fails the test if it fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	// Not t.Context(): cleanups run kubectl after it is canceled.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin/k8s/kubectl"), args...)
	cmd.Dir, cmd.Env = root, environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// eventually polls check every second until it returns nil or timeout
// passes, then fails with its last error.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(time.Second)
	}
}
