/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugintest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

var record = flag.Bool("record", false, "write the text output of the commands to internal/plugin/testdata/docs, for docs/cli.md")

// Recording reports whether the suite runs with -record.
func Recording() bool { return *record }

// Record writes r, the output of `kubectl teardown args`, to file in
// internal/plugin/testdata/docs when the suite runs with -record.
func Record(t testing.TB, file string, r Result, args ...string) {
	t.Helper()
	if *record {
		WriteTranscript(t, file, r, args...)
	}
}

// WriteTranscript writes r, the output of `kubectl teardown args`, as
// docs/cli.md shows it, to file in internal/plugin/testdata/docs.
func WriteTranscript(t testing.TB, file string, r Result, args ...string) {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "internal", "plugin", "testdata", "docs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("$ kubectl teardown " + strings.Join(args, " ") + "\n")
	b.WriteString(r.Out)
	b.WriteString(r.Err)
	if r.Code != 0 {
		fmt.Fprintf(&b, "(exit code %d)\n", r.Code)
	}
	if err := os.WriteFile(filepath.Join(dir, file), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
