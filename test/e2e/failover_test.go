//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLeaderKilledMidTeardown kills the leading replica's process (SIGKILL)
// while a teardown waits on a step: the other replica takes the
// Lease, the guarded ConfigMap is not released early (it stays Terminating
// with its key while the app's pod runs), and the teardown finishes once
// the pod is gone.
func TestLeaderKilledMidTeardown(t *testing.T) {
	const ns, key = "demo", "demo.teardown.dev/config-last"
	installController(t)
	samples := []string{
		filepath.Join(root, "config/samples/targets_clusterrole.yaml"),
		filepath.Join(root, "config/samples/quickstart.yaml"),
	}
	t.Cleanup(func() {
		if out, err := sh(context.Background(), "helm uninstall teardown -n teardown-system --wait --timeout 5m"); err != nil {
			t.Errorf("helm uninstall teardown: %v\n%s", err, out)
		}
		for i := len(samples) - 1; i >= 0; i-- {
			kubectl(t, "delete", "--ignore-not-found", "--timeout=2m", "-f", samples[i])
		}
		noLeftovers(t, 2*time.Minute)
	})
	for _, s := range samples {
		kubectl(t, "apply", "-f", s)
	}
	kubectl(t, "wait", "teardownpolicy/config-last", "-n", ns, "--for=jsonpath={.status.guarded}=2", "--timeout=1m")
	kubectl(t, "run", "app", "-n", ns, "--image=registry.k8s.io/pause:3.10", "--labels=app=demo")
	kubectl(t, "wait", "pod/app", "-n", ns, "--for=condition=Ready", "--timeout=2m")
	kubectl(t, "delete", "configmap", "app-config", "-n", ns, "--wait=false")
	eventually(t, 30*time.Second, "the teardown waiting on its step", func() error {
		out, err := sh(t.Context(), "kubectl teardown status -n "+ns)
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		if !strings.Contains(out, "app-pods-gone") {
			return fmt.Errorf("not waiting on app-pods-gone yet: %s", out)
		}
		return nil
	})

	leader, killed := killLeader(t)
	t.Logf("killed leader %s (SIGKILL); %s leads %s later", leader, leaseHolder(t), time.Since(killed).Round(100*time.Millisecond))

	// Nothing released early: the app's pod still runs, so the ConfigMap
	// stays Terminating with its key, through the new leader's start.
	until := time.Now().Add(10 * time.Second)
	for time.Now().Before(until) {
		f := kubectl(t, "get", "configmap", "app-config", "-n", ns, "-o", "jsonpath={.metadata.deletionTimestamp} {.metadata.finalizers}")
		if !strings.Contains(f, key) {
			t.Fatalf("app-config was released while the app's pod runs: %q", f)
		}
		time.Sleep(time.Second)
	}
	kubectl(t, "delete", "pod", "app", "-n", ns)
	kubectl(t, "wait", "configmap/app-config", "-n", ns, "--for=delete", "--timeout=1m")
}

// leaseHolder is the identity holding the controller's Lease.
func leaseHolder(t *testing.T) string {
	t.Helper()
	return kubectl(t, "get", "lease", "teardown-controller.teardown.dev", "-n", "teardown-system", "-o", "jsonpath={.spec.holderIdentity}")
}

// killLeader SIGKILLs the controller replica holding the Lease from the node,
// so that it cannot release its Lease (a pod deletion would send SIGTERM
// first, and the controller releases on its way out), and waits until
// another candidate leads: another replica after the lease expired, or the
// same pod's container restarted by the kubelet with a new identity. It
// returns the killed leader's identity and when it was killed.
func killLeader(t *testing.T) (string, time.Time) {
	t.Helper()
	leader := leaseHolder(t)
	pod, _, _ := strings.Cut(leader, "_")
	if pod == "" {
		t.Fatal("no replica holds the Lease")
	}
	id := strings.TrimPrefix(kubectl(t, "get", "pod", pod, "-n", "teardown-system", "-o", "jsonpath={.status.containerStatuses[0].containerID}"), "containerd://")
	tasks, err := exec.Command("ctr", "-a", filepath.Join(clusterDir, "containerd/containerd.sock"), "-n", "k8s.io", "tasks", "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr tasks ls: %v\n%s", err, tasks)
	}
	pid := 0
	for _, l := range strings.Split(string(tasks), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == id {
			pid, _ = strconv.Atoi(f[1])
		}
	}
	if pid == 0 {
		t.Fatalf("no task %s in:\n%s", id, tasks)
	}
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the leader %s (pid %d): %v", pod, pid, err)
	}
	eventually(t, 2*time.Minute, "another replica leading", func() error {
		if h := leaseHolder(t); h == leader || h == "" {
			return fmt.Errorf("the Lease is still %q's", h)
		}
		return nil
	})
	return leader, killed
}
