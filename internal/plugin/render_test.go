/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run with -update): %v", path, err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// The human output of explain, rendered from reports recorded on the real
// control plane (TestDocsScenario -docs -update).
func TestRenderReportGolden(t *testing.T) {
	for _, name := range []string{"explain_namespace", "explain_configmap", "explain_foreground"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			rep := &Report{}
			if err := json.Unmarshal(data, rep); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			renderReport(&out, rep, palette{})
			golden(t, name+".golden", out.Bytes())
			// The schema round-trips: no field is lost between JSON and Go.
			again, _ := json.MarshalIndent(rep, "", "  ")
			if diff := cmp.Diff(strings.TrimSpace(string(data)), string(again)); diff != "" {
				t.Errorf("JSON round trip (-file +re-encoded):\n%s", diff)
			}
		})
	}
}

func TestRenderStatusGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "status.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep := &StatusReport{}
	if err := json.Unmarshal(data, rep); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	renderStatus(&out, rep, palette{})
	golden(t, "status.golden", out.Bytes())
}

func TestRenderColourOnlyWhenAsked(t *testing.T) {
	rep := &Report{Target: ObjectRef{Kind: "ConfigMap", Namespace: "a", Name: "b"}, Terminating: true, TerminatingFor: "1m", Blocked: true,
		Findings: []Finding{{Cause: CauseOrphanFinalizer, Severity: SeverityBlocker, Message: "m"}}}
	rep.RootBlockers = markRoots(rep.Findings)
	var plain, coloured bytes.Buffer
	renderReport(&plain, rep, palette{})
	renderReport(&coloured, rep, palette{on: true})
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(coloured.String(), "\x1b[31m") {
		t.Errorf("colour: plain %q, coloured %q", plain.String(), coloured.String())
	}
	on, err := useColor("auto", &plain)
	if err != nil || on {
		t.Errorf("auto on a buffer = %v, %v; want no colour", on, err)
	}
}

func TestMarkRoots(t *testing.T) {
	fs := []Finding{{Cause: "A", Severity: SeverityBlocker, Children: []Finding{
		{Cause: "B", Severity: SeverityBlocker, Children: []Finding{{Cause: "C", Severity: SeverityInfo}}},
		{Cause: "D", Severity: SeverityWaiting},
	}}, {Cause: "E", Severity: SeverityWarning}}
	var got []string
	for _, r := range markRoots(fs) {
		got = append(got, r.Cause)
	}
	if diff := cmp.Diff([]string{"B"}, got); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}
}
