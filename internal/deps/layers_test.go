/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package deps_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

const module = "github.com/teardown-dev/teardown/"

// layers are docs/architecture.md's table, top first: a package may import
// its own layer and those below it, never one above. A package missing here
// fails the test, so that a new one is placed on purpose.
var layers = [][]string{
	{"cmd/kubectl-teardown", "cmd/teardown-controller"},
	{"internal/controller", "internal/demo"},
	{"internal/controller/teardownpolicy", "internal/controller/diagnosis", "internal/guarded", "internal/admit"},
	{
		"internal/steps", "internal/policy", "internal/waits", "internal/inuse", "internal/diagnose", "internal/diagnose/kube",
		"internal/diagnose/signals",
		"internal/plugin", "internal/uninstall", "internal/installcheck", "internal/controller/cachetransform",
		"internal/queuekey", "internal/cleantext", "internal/version", "internal/lease", "internal/recordseal", "internal/fairqueue",
		"internal/kubeconfig",
	},
	{"api/v1alpha1", "pkg/finalizer", "pkg/finalizer/record"},
}

// testSupport may import anything; no package of the layers imports it.
var testSupport = map[string]bool{
	"internal/testenv": true, "internal/testenv/procctl": true, "internal/plugin/plugintest": true,
	"internal/chart": true, "internal/deps": true, "internal/diagnose/kube/kubefake": true,
}

// TestNoPackageImportsUpward holds every package of the module's products
// to its layer (non-test files; tests may reach further).
func TestNoPackageImportsUpward(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./internal/...", "./pkg/...", "./api/...", "./cmd/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layerOf[p] = i
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if testSupport[pkg] {
			continue
		}
		layer, ok := layerOf[pkg]
		if !ok {
			t.Errorf("%s is in no layer: place it in docs/architecture.md's table and in layers here", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if testSupport[dep] {
				t.Errorf("%s imports the test support %s", pkg, dep)
				continue
			}
			if depLayer, ok := layerOf[dep]; ok && depLayer < layer {
				t.Errorf("%s (layer %d) imports %s of layer %d above it", pkg, layer, dep, depLayer)
			}
		}
	}
}
