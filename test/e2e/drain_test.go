//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDrainKeepsAController drains the node the controller runs on while a
// teardown waits on its step. With one node the evicted replica's
// replacement cannot be scheduled, so the chart's PodDisruptionBudget
// (minAvailable 1) refuses the second eviction and the drain times out:
// one replica keeps running and leading, nothing is released early, and
// that replica finishes the teardown while the node is still cordoned.
func TestDrainKeepsAController(t *testing.T) {
	const ns, key = "demo", "demo.teardown.dev/config-last"
	node := strings.TrimSpace(kubectl(t, "get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"))
	installController(t)
	samples := []string{
		filepath.Join(root, "config/samples/targets_clusterrole.yaml"),
		filepath.Join(root, "config/samples/quickstart.yaml"),
	}
	t.Cleanup(func() {
		kubectl(t, "uncordon", node)
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

	out, err := sh(t.Context(), "kubectl drain "+node+" --pod-selector=app.kubernetes.io/name=teardown-controller --timeout=40s")
	if err == nil {
		t.Fatalf("the drain evicted both replicas despite the PodDisruptionBudget:\n%s", out)
	}
	if !strings.Contains(out, "disruption budget") {
		t.Fatalf("the drain failed, but not on the PodDisruptionBudget: %v\n%s", err, out)
	}
	t.Logf("drain stopped by the PodDisruptionBudget: %v", err)
	running := strings.Fields(kubectl(t, "get", "pods", "-n", "teardown-system", "-l", "app.kubernetes.io/name=teardown-controller",
		"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}"))
	if len(running) != 1 {
		t.Fatalf("want one replica left running after the drain, got %v", running)
	}
	eventually(t, time.Minute, "the remaining replica leading", func() error {
		h := kubectl(t, "get", "lease", "teardown-controller.teardown.dev", "-n", "teardown-system", "-o", "jsonpath={.spec.holderIdentity}")
		if !strings.HasPrefix(h, running[0]+"_") {
			return fmt.Errorf("the Lease is %q's", h)
		}
		return nil
	})
	if f := kubectl(t, "get", "configmap", "app-config", "-n", ns, "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(f, key) {
		t.Fatalf("app-config was released while the app's pod runs: %q", f)
	}
	// The node is still cordoned: the one replica finishes the teardown.
	kubectl(t, "delete", "pod", "app", "-n", ns)
	kubectl(t, "wait", "configmap/app-config", "-n", ns, "--for=delete", "--timeout=1m")
}
