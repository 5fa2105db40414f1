/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package report

import (
	"fmt"
	"io"
	"strings"
)

// Markdown writes the results as markdown tables: throughput, latency and
// writes per N; memory; the targets with PASS or MISS.
func Markdown(w io.Writer, r *Results) {
	m := r.Machine
	fmt.Fprintf(w, "Machine: %d CPUs, %.1f GiB, %s; Go %s; Kubernetes %s; load average %.2f at start, %.2f at end.\n\n",
		m.CPUs, m.MemoryGiB, orDash(m.CPUModel), m.GoVersion, m.Kubernetes, m.LoadAtStart, m.LoadAtEnd)
	fmt.Fprintln(w, "| N | scenario | workers | objects/s | vs raw | vs baseline default | vs baseline tuned | p50 | p99 | writes/object attach + remove | conflicts |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "| %s | %s | %d | %.0f | %s | %s | %s | %s | %s | %.2f + %.2f | %.2f%% |\n",
			Thousands(run.N), run.Scenario, run.Workers, run.Throughput,
			times(run.VsRaw), times(run.VsBaselineDefault), times(run.VsBaselineTuned),
			Seconds(run.P50), Seconds(run.P99), run.AttachWrites, run.RemoveWrites, run.ConflictShare*100)
	}
	fmt.Fprintln(w)
	if len(r.RSS) > 0 {
		fmt.Fprintln(w, "| controller | guarded objects | RSS with none | RSS with them | marginal RSS/object | baseline over it | anonymous RSS/object | after FreeOSMemory | live heap/object |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, m := range r.RSS {
			fmt.Fprintf(w, "| %s | %s × %d B | %.1f MiB | %.1f MiB | %s | %s | %s | %s | %s |\n",
				m.Controller, Thousands(m.Objects), m.DataBytes, mib(m.None), mib(m.Guarded),
				KiB(m.PerObject), times(m.VsBaseline), KiB(m.AnonPerObject), KiB(m.FloorPerObject), KiB(m.HeapPerObject))
		}
		fmt.Fprintln(w)
	}
	waitsMarkdown(w, r)
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "| target | want | got | |")
		fmt.Fprintln(w, "|---|---|---|---|")
		for _, t := range r.Targets {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.Name, t.Want, t.Got, passMiss(t.Pass))
		}
		fmt.Fprintln(w)
	}
}

func passMiss(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func times(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", v)
}

// Seconds writes a duration in seconds as ms below one second, else s.
func Seconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

// KiB writes bytes as KiB.
func KiB(b float64) string { return fmt.Sprintf("%.2f KiB", b/1024) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// Thousands writes n with comma separators: 10000 is 10,000.
func Thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
