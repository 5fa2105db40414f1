/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The plugin reads Teardown's progress records through pkg/finalizer/record,
// so it links neither controller-runtime nor Prometheus, which package
// finalizer needs only to write them.
func TestNoControllerDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"sigs.k8s.io/controller-runtime", "github.com/prometheus/", "github.com/teardown-dev/teardown/pkg/finalizer"} {
			if strings.HasPrefix(pkg, banned) && pkg != "github.com/teardown-dev/teardown/pkg/finalizer/record" {
				t.Errorf("kubectl-teardown links %s", pkg)
			}
		}
	}
}
