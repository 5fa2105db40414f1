/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sample() *Results {
	r := &Results{
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Machine: Machine{CPUs: 2, MemoryGiB: 23.5, GoVersion: "go1.26.8", Kubernetes: "v1.36.3"},
		Runs: []Run{
			{Scenario: Raw, N: 1000, Workers: 32, Throughput: 1000, P50: 0.01, P99: 0.05, RemoveWrites: 1, Writes: 1000},
			{Scenario: Teardown, N: 1000, Workers: 16, Throughput: 850, P50: 0.4, P99: 1.1, AttachWrites: 1, RemoveWrites: 1, Writes: 2000, Conflicts: 1, ConflictShare: 0.0005},
			{Scenario: TeardownDeclared, N: 1000, Workers: 16, Throughput: 700, P50: 0.4, P99: 1.1, AttachWrites: 0.01, RemoveWrites: 1, Writes: 1010},
			{Scenario: BaselineDefault, N: 1000, Workers: 1, Throughput: 400, P50: 1.2, P99: 2.3, AttachWrites: 1.2, RemoveWrites: 1.1, Writes: 2300, Conflicts: 100, ConflictShare: 0.043},
			{Scenario: BaselineTuned, N: 1000, Workers: 16, Throughput: 900, P50: 0.3, P99: 0.9, AttachWrites: 1, RemoveWrites: 1, Writes: 2000},
		},
		RSS: []RSS{
			{Controller: Teardown, Objects: 20000, DataBytes: 4096, None: 40 << 20, Guarded: 70 << 20, PerObject: 1500},
			{Controller: BaselineTuned, Objects: 20000, DataBytes: 4096, None: 40 << 20, Guarded: 240 << 20, PerObject: 10000},
		},
	}
	r.FillRatios()
	r.Targets = Evaluate(r)
	return r
}

func TestEvaluate(t *testing.T) {
	r := sample()
	got := map[string]bool{}
	for _, tg := range r.Targets {
		got[tg.Name] = tg.Pass
	}
	want := map[string]bool{
		"N=1000 teardown: throughput vs raw limit":                     true,  // 0.85
		"N=1000 teardown: throughput vs default baseline":              true,  // 2.125
		"N=1000 teardown: throughput vs tuned baseline":                false, // 0.94
		"N=1000 teardown: attach writes per object":                    true,
		"N=1000 teardown: remove writes per object":                    true,
		"N=1000 teardown: conflicts among its writes":                  true,
		"N=1000 teardown-declared: throughput vs raw limit":            false, // 0.7
		"N=1000 teardown-declared: throughput vs default baseline":     false, // 1.75
		"N=1000 teardown-declared: throughput vs tuned baseline":       false,
		"N=1000 teardown-declared: attach writes per object":           false, // Declared must not write
		"N=1000 teardown-declared: remove writes per object":           true,
		"N=1000 teardown-declared: conflicts among its writes":         true,
		"marginal RSS per guarded object (20000 ConfigMaps of 4096 B)": true,
		"marginal RSS per guarded object vs baseline":                  true, // 6.7x
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if run, _ := r.Find(Teardown, 1000); run.VsRaw != 0.85 || run.VsBaselineDefault != 2.125 {
		t.Errorf("ratios = %v, %v; want 0.85, 2.125", run.VsRaw, run.VsBaselineDefault)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct{ p, want float64 }{{50, 0.05}, {99, 0.099}, {100, 0.1}, {1, 0.001}} {
		if got := Percentile(ds, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v, want 0", got)
	}
}

func TestMarkdown(t *testing.T) {
	r := sample()
	var md bytes.Buffer
	Markdown(&md, r)
	for _, want := range []string{"| 1,000 | teardown | 16 | 850 | 0.85x | 2.12x | 0.94x | 400 ms | 1.10 s | 1.00 + 1.00 | 0.05% |", "| MISS |", "| PASS |", "1.46 KiB"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMedian(t *testing.T) {
	runs := []Run{
		{Scenario: Teardown, Throughput: 300, P99: 3},
		{Scenario: Raw, Throughput: 900},
		{Scenario: Teardown, Throughput: 100, P99: 1},
		{Scenario: Teardown, Throughput: 200, P99: 2},
	}
	got, ok := Median(runs, Teardown)
	if !ok || got.Throughput != 200 || got.P99 != 2 {
		t.Errorf("Median = %+v, %v; want the 200/s round", got, ok)
	}
	if diff := cmp.Diff([]float64{300, 100, 200}, got.Rounds); diff != "" {
		t.Errorf("Rounds (-want +got):\n%s", diff)
	}
	if got, _ := Median(runs, Raw); got.Rounds != nil || got.Throughput != 900 {
		t.Errorf("Median of one = %+v", got)
	}
	if _, ok := Median(runs, BaselineTuned); ok {
		t.Error("Median of none found a run")
	}
}
