/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package scale

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentile(t *testing.T) {
	values := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct {
		p    float64
		want float64
	}{{50, 5}, {99, 10}, {100, 10}, {10, 1}, {0, 1}, {90, 9}} {
		if got := Percentile(values, tc.p); got != tc.want {
			t.Errorf("Percentile(p%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if diff := cmp.Diff([]float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}, values); diff != "" {
		t.Errorf("Percentile changed its input (-want +got):\n%s", diff)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
}

func TestFocusedCPU(t *testing.T) {
	for _, tc := range []struct {
		name, out      string
		focused, total float64
		err            error
	}{
		{name: "seconds", out: "File: teardown\nActive filters:\n   focus=count\nShowing nodes accounting for 1.23s, 4.56% of 27s total\n      flat  flat%", focused: 1.23, total: 27},
		{name: "milliseconds", out: "Showing nodes accounting for 450ms, 1.5% of 30.01s total\n", focused: 0.45, total: 30.01},
		{name: "minutes", out: "Showing nodes accounting for 0, 0% of 1.5mins total\n", focused: 0, total: 90},
		{name: "no match", out: "Active filters:\n   focus=nothing\nno samples\n", err: ErrNoSamples},
	} {
		t.Run(tc.name, func(t *testing.T) {
			focused, total, err := FocusedCPU(tc.out)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff([]float64{tc.focused, tc.total}, []float64{focused, total}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := FocusedCPU("garbage"); err == nil {
		t.Error("FocusedCPU(garbage) = nil error, want one")
	}
}

func TestMarkdown(t *testing.T) {
	r := &Results{
		Started: time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC), Duration: "20m0s", Machine: "2 CPUs",
		Size:      Size{Namespaces: 1000, ObjectsPerNs: 100, BigNsObjects: 10000, Pods: 20000, Policies: 1001, ClusterPolicies: 1, Guarded: 111000},
		Tuning:    []string{"etcd --quota-backend-bytes=8589934592"},
		Create:    &Phase{Objects: 131000, Seconds: 262},
		ColdStart: &ColdStart{Phase: Phase{Objects: 111000, Seconds: 300}, CPUSeconds: 250, RSS: 300 << 20, HeapInuse: 111 << 20, PeakRSS: 400 << 20},
		Status:    &PassCost{WindowSeconds: 45, Interval: "15s", Passes: 3, CPUSeconds: 0.6, Objects: 111000},
		Attach: &Latency{Objects: 2000, Rate: 400, P50: 0.05, P99: 0.5, Max: 0.7, Via: "the controller's watch",
			Parts:  []Part{PartOf("the create", []float64{0.002, 0.004})},
			Queue:  &Queue{Adds: 4000, Gets: 4000, Reconciles: 4000, WaitSeconds: 400, ReconcileSeconds: 40, MaxDepth: 900, Samples: 30},
			Server: &ServerTimes{Creates: 2000, CreateSeconds: 20, Patches: 2000, PatchSeconds: 10}},
		AttachPaced: &Latency{Objects: 20, Rate: 4, P50: 0.003, P99: 0.004, Max: 0.004},
		Drain:       &Drain{Objects: 10000, Seconds: 30, Requests: 21000, Writes: map[string]float64{"PATCH configmaps": 10000, "DELETE configmaps": 10000}},
		Growth:      []GrowthStep{{Policies: 100, Added: 100, Seconds: 5, Reconciles: 200, ReconcileSeconds: 2, CPUSeconds: 1}},
		Failed:      []string{"diagnosis: timed out"},
	}
	var b bytes.Buffer
	Markdown(&b, r)
	got := b.String()
	for _, want := range []string{
		"111,000 guarded objects: 100,000 ConfigMaps in 1,000 namespaces",
		"| controller start to all attached | 300 s | 111,000 objects, 1,002 policies, none attached at start |",
		"| attach rate from a cold start | 370 objects/s |",
		"| controller live heap (HeapInuse after GC) | 111 MiB | 1049 B per guarded object |",
		"| one policy status pass (CPU) | 200.0 ms per pass (0.60 s in 3.0 passes) |",
		"| attach latency p50 / p99 / max under creation load | 50.0 ms / 500.0 ms / 700.0 ms |",
		"| &nbsp;&nbsp;of which the create | 2.0 ms / 4.0 ms / 4.0 ms |",
		"| &nbsp;&nbsp;controller's attach queue | mean wait 100.0 ms, mean reconcile 10.0 ms | 4,000 adds, 4,000 reconciles, depth at most 900 (30 samples) |",
		"| &nbsp;&nbsp;API server, ConfigMap create / PATCH | mean 10.0 ms / 5.0 ms |",
		"| attach latency p50 / p99 / max, paced | 3.0 ms / 4.0 ms / 4.0 ms | 20 objects created at 4.0/s",
		"| API requests of the drain | 21,000 (2.10 per object) | apiserver_request_total delta, every client: DELETE configmaps 10,000, PATCH configmaps 10,000 |",
		"| 100 | 100 | 5.0 s | 200 | 10.0 ms | 1.00 s | 10.0 ms |",
		"- FAILED: diagnosis: timed out",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("results.md lacks %q; it is:\n%s", want, got)
		}
	}
}

func TestNum(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 111000: "111,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := num(n); got != want {
			t.Errorf("num(%d) = %q, want %q", n, got, want)
		}
	}
}
