/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/teardown-dev/teardown/bench/report"
)

// TestChartFromResults: run draws results.json into a PNG of the chart's
// width with the three panels' height.
func TestChartFromResults(t *testing.T) {
	r := &report.Results{
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Machine: report.Machine{CPUs: 2, GoVersion: "go1.26.8", Kubernetes: "v1.36.3"},
		Runs: []report.Run{
			{Scenario: report.Raw, N: 1000, Workers: 32, Throughput: 1000, P50: 0.01, P99: 0.05},
			{Scenario: report.Teardown, N: 1000, Workers: 16, Throughput: 850, P50: 0.4, P99: 1.1},
			{Scenario: report.BaselineDefault, N: 1000, Workers: 1, Throughput: 400, P50: 1.2, P99: 2.3},
		},
		RSS: []report.RSS{{Controller: report.Teardown, Objects: 20000, DataBytes: 4096, PerObject: 1500}},
	}
	r.FillRatios()
	r.Targets = report.Evaluate(r)
	dir := t.TempDir()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(dir, "results.json"), filepath.Join(dir, "chart.png")
	if d := os.Getenv("BENCH_CHART_DIR"); d != "" {
		out = filepath.Join(d, "sample-chart.png") // to look at it
	}
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != chartWidth || b.Dy() < 400 {
		t.Errorf("chart is %v", b)
	}
}
