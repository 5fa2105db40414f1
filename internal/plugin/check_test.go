/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"encoding/json"
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

// check -o json prints the report (the same checks, the same exit code) for
// scripts, and -o jsonpath selects from it; an unknown -o is a usage error
// before any request.
func TestCheckCommandReportForScripts(t *testing.T) {
	needCluster(t)
	r := cli(t, "", nil, "check", "--controller-namespace", "nowhere", "-o", "json")
	if r.code != ExitError {
		t.Errorf("exit %d, want %d\n%s%s", r.code, ExitError, r.out, r.err)
	}
	var rep CheckReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("-o json printed no report: %v\n%s", err, r.out)
	}
	if rep.Kind != "CheckReport" || rep.Passed || len(rep.Checks) < 5 {
		t.Errorf("report %+v, want a failed CheckReport with every check", rep)
	}
	results := map[string]string{}
	for _, c := range rep.Checks {
		results[c.Name] = c.Result
	}
	if results["CRDs"] != "ok" || results["controller"] != "fail" {
		t.Errorf("checks %v, want CRDs ok and controller fail", results)
	}
	r = cli(t, "", nil, "check", "--controller-namespace", "nowhere", "-o", `jsonpath={.checks[?(@.result=="fail")].name}`)
	if !strings.Contains(r.out, "controller") || strings.Contains(r.out, "CRDs") {
		t.Errorf("jsonpath of the failed checks printed %q", r.out)
	}
	r = cli(t, "", nil, "check", "-o", "table")
	if r.code != ExitUsage || !strings.Contains(r.err, "unknown output format") {
		t.Errorf("check -o table: exit %d, %q; want a usage error", r.code, r.err)
	}
}
