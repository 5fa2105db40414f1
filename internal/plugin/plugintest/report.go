/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugintest

import (
	"encoding/json"
	"testing"

	"github.com/teardown-dev/teardown/internal/diagnose"
)

// DecodeReport decodes explain's -o json output.
func DecodeReport(t testing.TB, r Result) *diagnose.Report {
	t.Helper()
	rep := &diagnose.Report{}
	if err := json.Unmarshal([]byte(r.Out), rep); err != nil {
		t.Fatalf("decoding explain's JSON (exit %d): %v\n%s%s", r.Code, err, r.Out, r.Err)
	}
	return rep
}

// Dump is a report as indented JSON, for failure messages.
func Dump(rep *diagnose.Report) string {
	data, _ := json.MarshalIndent(rep, "", "  ")
	return string(data)
}

// Find returns a copy of the first finding, in tree order, with cause about
// an object named name ("" for any), or nil.
func Find(rep *diagnose.Report, cause, name string) *diagnose.Finding {
	var got *diagnose.Finding
	diagnose.WalkFindings(rep.Findings, func(f *diagnose.Finding) {
		if got == nil && f.Cause == cause && (name == "" || (f.Object != nil && f.Object.Name == name)) {
			c := *f
			got = &c
		}
	})
	return got
}

// Root returns the root blocker with cause about an object named name (""
// for any), or nil.
func Root(rep *diagnose.Report, cause, name string) *diagnose.Finding {
	for i, r := range rep.RootBlockers {
		if r.Cause == cause && (name == "" || (r.Object != nil && r.Object.Name == name)) {
			return &rep.RootBlockers[i]
		}
	}
	return nil
}
