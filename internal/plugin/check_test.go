/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"strings"
	"testing"
)

// kubectl teardown check against a control plane with the CRDs and nothing
// else: exit 1, the missing parts named (internal/installcheck tests each
// check; this tests the command around them).
func TestCheckCommandFailsOnAMissingController(t *testing.T) {
	needCluster(t)
	r := cli(t, "", nil, "check", "--controller-namespace", "nowhere")
	if r.code != ExitError {
		t.Errorf("exit %d, want %d\n%s%s", r.code, ExitError, r.out, r.err)
	}
	for _, want := range []string{
		"ok    CRDs ",
		"FAIL  admission policies ",
		"FAIL  controller         no Lease nowhere/teardown-controller.teardown.dev",
		"ok    attach webhook     not enabled",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
	if !strings.Contains(r.err, "Teardown is not installed or not working") {
		t.Errorf("stderr %q, want the reason", r.err)
	}
}
