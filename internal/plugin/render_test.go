/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/teardown-dev/teardown/internal/diagnose"
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
			rep := &diagnose.Report{}
			if err := json.Unmarshal(data, rep); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			diagnose.RenderReport(&out, rep, diagnose.Palette{})
			golden(t, name+".golden", out.Bytes())
			// The schema round-trips: no field is lost between JSON and Go.
			again, _ := json.MarshalIndent(rep, "", "  ")
			if diff := cmp.Diff(strings.TrimSpace(string(data)), string(again)); diff != "" {
				t.Errorf("JSON round trip (-file +re-encoded):\n%s", diff)
			}
		})
	}
}

// statusFixture is status -A -o json recorded from the documentation
// scenario (TestDocsScenario -docs -update).
func statusFixture(t *testing.T) *StatusReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "status.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep := &StatusReport{}
	if err := json.Unmarshal(data, rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// printStatus prints rep as `status args...` would, with namespace as the
// namespace listed ("" for -A), and returns stdout and stderr as one text.
func printStatus(t *testing.T, rep *StatusReport, namespace string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	o := newStatusOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd := newStatusCommand(o)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("status %v: %v", args, err)
	}
	o.namespace = namespace
	if err := o.print(rep, diagnose.Palette{}); err != nil {
		t.Fatalf("status %v: %v", args, err)
	}
	return strings.TrimSpace("$ kubectl teardown status "+strings.Join(args, " ")) + "\n" + out.String() + "--- stderr\n" + errOut.String()
}

// The table, -o wide|name|json|yaml|jsonpath|go-template and --no-headers of
// status, printed from a report recorded on the real control plane.
func TestRenderStatusGolden(t *testing.T) {
	all := statusFixture(t)
	// What status -n web gets from the server: the namespace's content.
	web := statusFixture(t)
	web.Items = slices.DeleteFunc(web.Items, func(r StatusRow) bool { return r.Object.Namespace != "web" })
	stuck := statusFixture(t)
	markStuck(stuck, stuck.Items[len(stuck.Items)-1].DeletionTimestamp.Add(time.Minute), 30*time.Second)
	empty := &StatusReport{APIVersion: diagnose.ReportAPIVersion, Kind: "StatusReport", Items: []StatusRow{}}
	cases := []struct {
		name      string
		rep       *StatusReport
		namespace string
		args      []string
	}{
		{"status", all, "", []string{"-A"}},
		{"status_namespace", web, "web", nil},
		{"status_wide", all, "", []string{"-A", "-o", "wide"}},
		{"status_no_headers", web, "web", []string{"--no-headers"}},
		{"status_name", all, "", []string{"-A", "-o", "name"}},
		{"status_json", web, "web", []string{"-o", "json"}},
		{"status_yaml", web, "web", []string{"-o", "yaml"}},
		{"status_jsonpath", all, "", []string{"-A", "-o", `jsonpath={range .items[*]}{.object.kind}/{.object.name}{"\t"}{.terminatingFor}{"\n"}{end}`}},
		{"status_go_template", web, "web", []string{"-o", `go-template={{range .items}}{{.object.name}}: {{.blocker}}{{"\n"}}{{end}}`}},
		{"status_stuck", web, "web", []string{"--stuck-after", "30s"}},
		{"status_stuck_all", stuck, "", []string{"-A", "--stuck-after", "30s"}},
		{"status_empty", empty, "web", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := c.rep
			if c.name == "status_stuck" {
				rep = statusFixture(t)
				rep.Items = slices.DeleteFunc(rep.Items, func(r StatusRow) bool { return r.Object.Namespace != "web" })
				markStuck(rep, rep.Items[0].DeletionTimestamp.Add(time.Minute), 30*time.Second)
			}
			golden(t, c.name+".golden", []byte(printStatus(t, rep, c.namespace, c.args...)))
		})
	}
}

// explain's and plan's -o goes through the same printers: the report's
// schema is what jsonpath and go-template see.
func TestRenderExplainFormatsGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "explain_configmap.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep := &diagnose.Report{}
	if err := json.Unmarshal(data, rep); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, args := range [][]string{
		{"-o", "jsonpath={.target.kind}/{.target.name}: {.rootBlockers[*].cause}{\"\\n\"}"},
		{"-o", `go-template={{range .findings}}{{.cause}} {{.finalizer}}{{"\n"}}{{end}}`},
		{"--template", `{{.blocked}}{{"\n"}}`},
	} {
		o := newOutputFlags(false)
		cmd := &cobra.Command{Use: "explain"}
		o.addFlags(cmd, "a tree", false)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		if err := o.validate(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "$ kubectl teardown explain configmap/bucket -n shop %s\n", strings.Join(args, " "))
		if err := o.printReport(&b, rep.APIVersion, rep.Kind, rep); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "explain_formats.golden", b.Bytes())
	// -o json is the documented schema, indented as kubectl does.
	o := newOutputFlags(false)
	*o.print.OutputFormat = "json"
	var js bytes.Buffer
	if err := o.printReport(&js, rep.APIVersion, rep.Kind, rep); err != nil {
		t.Fatal(err)
	}
	again := &diagnose.Report{}
	if err := json.Unmarshal(js.Bytes(), again); err != nil || !cmp.Equal(rep, again) {
		t.Errorf("-o json does not round-trip (%v): %s", err, cmp.Diff(rep, again))
	}
}

// -o values the command does not know, and -o name where there is no
// object to name, are usage errors that list the formats.
func TestOutputFormatRefused(t *testing.T) {
	for _, c := range []struct {
		withName bool
		own      []string
		format   string
	}{
		{false, nil, "wide"},
		{false, nil, "name"},
		{true, []string{outputWide}, "table"},
		{true, []string{outputWide}, "jsonpath"},
	} {
		o := newOutputFlags(c.withName, c.own...)
		*o.print.OutputFormat = c.format
		err := o.validate()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != ExitUsage {
			t.Errorf("-o %s: %v, want a usage error", c.format, err)
		}
	}
}

func TestRenderColourOnlyWhenAsked(t *testing.T) {
	rep := &diagnose.Report{Target: diagnose.ObjectRef{Kind: "ConfigMap", Namespace: "a", Name: "b"}, Terminating: true, TerminatingFor: "1m", Blocked: true,
		Findings: []diagnose.Finding{{Cause: diagnose.CauseOrphanFinalizer, Severity: diagnose.SeverityBlocker, Message: "m"}}}
	rep.RootBlockers = diagnose.MarkRoots(rep.Findings)
	var plain, coloured bytes.Buffer
	diagnose.RenderReport(&plain, rep, diagnose.Palette{})
	diagnose.RenderReport(&coloured, rep, diagnose.Palette{On: true})
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(coloured.String(), "\x1b[31m") {
		t.Errorf("colour: plain %q, coloured %q", plain.String(), coloured.String())
	}
	on, err := useColor("auto", &plain)
	if err != nil || on {
		t.Errorf("auto on a buffer = %v, %v; want no colour", on, err)
	}
}
