/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package deps_test checks what the module puts in the module graph of
// those who import its library.
package deps_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestImportersModuleGraph: a module that imports only pkg/finalizer gets
// none of the modules the repository needs only for its tests and its
// benchmark (etcd's Go client, golang.org/x/image) in its module graph, so
// they cannot raise its version floors. Before, go.mod required both
// (test/plugin/chains's corrupt-object test, bench/report's chart).
func TestImportersModuleGraph(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/importer\n\ngo 1.26.0\n\nrequire github.com/teardown-dev/teardown v0.0.0\n\nreplace github.com/teardown-dev/teardown => "+root+"\n")
	write("main.go", "package main\n\nimport \"github.com/teardown-dev/teardown/pkg/finalizer\"\n\nvar _ = finalizer.New\n\nfunc main() {}\n")
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return string(out)
	}
	gocmd("mod", "tidy")
	gocmd("build", "./...")
	graph := gocmd("mod", "graph")
	if !strings.Contains(graph, "github.com/teardown-dev/teardown@v0.0.0 sigs.k8s.io/controller-runtime@") {
		t.Fatalf("the graph does not look like the module's:\n%.2000s", graph)
	}
	for _, mod := range []string{"go.etcd.io/etcd/client/v3@", "go.etcd.io/etcd/api/v3@", "golang.org/x/image@"} {
		if strings.Contains(graph, mod) {
			t.Errorf("an importer of pkg/finalizer has %s in its module graph", strings.TrimSuffix(mod, "@"))
		}
	}
}
