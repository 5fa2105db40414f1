//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// checkObjects are what the chart's install check makes: all hooks deleted
// once the check passed, so that nothing of them is left.
var checkObjects = []string{
	"pod/teardown-check", "serviceaccount/teardown-check", "role/teardown-check", "rolebinding/teardown-check",
}

// helmTest runs helm test on the release: the chart's check Pod runs the
// image in the cluster as its own ServiceAccount and must pass; then its
// objects are gone.
func helmTest(t *testing.T) {
	t.Helper()
	out, err := sh(t.Context(), "helm test teardown -n teardown-system --timeout 3m")
	if err != nil || !strings.Contains(out, "teardown-check") || !regexp.MustCompile(`Phase:\s+Succeeded`).MatchString(out) {
		t.Fatalf("helm test teardown: %v\n%s", err, out)
	}
	t.Logf("$ helm test teardown -n teardown-system\n%s", out)
	checkRanAndWent(t)
}

// checkRanAndWent: a container of the check Pod really started on the node
// (the kubelet's Event outlives the Pod), and none of the check's objects
// is left.
func checkRanAndWent(t *testing.T) {
	t.Helper()
	ev := kubectl(t, "get", "events", "-n", "teardown-system", "--field-selector", "involvedObject.name=teardown-check",
		"-o", "custom-columns=KIND:.involvedObject.kind,REASON:.reason")
	if !regexp.MustCompile(`Pod\s+Started`).MatchString(ev) {
		t.Fatalf("no Started event of the check Pod:\n%s", ev)
	}
	eventually(t, time.Minute, "the check's objects gone", func() error {
		args := append([]string{"get", "-n", "teardown-system", "--ignore-not-found", "-o", "name"}, checkObjects...)
		args = append(args, "clusterrole/teardown-check", "clusterrolebinding/teardown-check")
		if out := strings.TrimSpace(kubectl(t, args...)); out != "" {
			return &leftError{out}
		}
		return nil
	})
}

type leftError struct{ left string }

func (e *leftError) Error() string { return "still there: " + e.left }
