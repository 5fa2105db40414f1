/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command plot draws the benchmark's chart (chart.png, docs/performance.png)
// from the results.json bench/cmd/bench writes, which runs it at its end:
//
//	go -C bench/plot run . -results bin/bench/results.json -out bin/bench/chart.png
//
// It is a module of its own so that golang.org/x/image, which draws the
// text, is not a requirement of the main module, and so does not raise the
// version floors of those who import pkg/finalizer.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/teardown-dev/teardown/bench/report"
)

func main() {
	in := flag.String("results", "results.json", "the results bench/cmd/bench wrote")
	out := flag.String("out", "chart.png", "where to write the chart")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	r := &report.Results{}
	if err := json.Unmarshal(data, r); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return WritePNG(out, r)
}
