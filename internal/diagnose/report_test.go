/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMarkRoots(t *testing.T) {
	fs := []Finding{{Cause: "A", Severity: SeverityBlocker, Children: []Finding{
		{Cause: "B", Severity: SeverityBlocker, Children: []Finding{{Cause: "C", Severity: SeverityInfo}}},
		{Cause: "D", Severity: SeverityWaiting},
	}}, {Cause: "E", Severity: SeverityWarning}}
	var got []string
	for _, r := range MarkRoots(fs) {
		got = append(got, r.Cause)
	}
	if diff := cmp.Diff([]string{"B"}, got); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}
}
