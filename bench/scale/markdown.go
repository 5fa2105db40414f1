/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package scale

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Markdown writes results.md: the size, the tuning, one table of every
// figure with the load it was measured under, the growth table, the notes.
func Markdown(w io.Writer, r *Results) {
	s := r.Size
	fmt.Fprintf(w, "# Scale benchmark (make bench-scale)\n\n")
	fmt.Fprintf(w, "Started %s, took %s. Machine: %s.\n\n", r.Started.Format("2006-01-02 15:04 UTC"), r.Duration, r.Machine)
	fmt.Fprintf(w, "Load: %s guarded objects: %s ConfigMaps in %s namespaces (%s each, one TeardownPolicy each), %s in one more namespace (its own policy), %s ServiceAccounts guarded by %d ClusterTeardownPolicy with an `unused` step; %s pods (never scheduled: no node, they stay Pending) for its in-use index.\n\n",
		num(s.Guarded), num(s.Namespaces*s.ObjectsPerNs), num(s.Namespaces), num(s.ObjectsPerNs), num(s.BigNsObjects),
		num(s.Namespaces), s.ClusterPolicies, num(s.Pods))
	if len(r.Tuning) > 0 {
		fmt.Fprintf(w, "Control plane tuning:\n\n")
		for _, t := range r.Tuning {
			fmt.Fprintf(w, "- %s\n", t)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| measure | value | load |\n|---|---:|---|\n")
	row := func(measure, value, load string) { fmt.Fprintf(w, "| %s | %s | %s |\n", measure, value, load) }
	if c := r.Create; c != nil {
		row("objects created (driver, 32 workers)", fmt.Sprintf("%s in %s (%.0f/s)", num(c.Objects), secs(c.Seconds), c.Rate()), "no controller running")
	}
	if c := r.ColdStart; c != nil {
		row("controller start to all attached", secs(c.Seconds), fmt.Sprintf("%s objects, %s policies, none attached at start", num(c.Objects), num(s.Policies+s.ClusterPolicies)))
		row("attach rate from a cold start", fmt.Sprintf("%.0f objects/s", c.Rate()), fmt.Sprintf("%.0f controller CPU s over it", c.CPUSeconds))
		row("controller RSS, settled", mib(c.RSS), fmt.Sprintf("%s guarded, %s pods indexed (peak RSS %s)", num(s.Guarded), num(s.Pods), mib(c.PeakRSS)))
		row("controller live heap (HeapInuse after GC)", mib(c.HeapInuse), fmt.Sprintf("%.0f B per guarded object", ratio(float64(c.HeapInuse), float64(s.Guarded))))
	}
	if p := r.Status; p != nil {
		row("one policy status pass (CPU)", passValue(p), fmt.Sprintf("%s policies over %s objects; %s of CPU profile every %s", num(s.Policies+s.ClusterPolicies), num(p.Objects), secs(p.WindowSeconds), p.Interval))
	}
	if p := r.Diagnosis; p != nil {
		row("one diagnosis pass (CPU)", passValue(p), fmt.Sprintf("%s guarded objects terminating, held by their pods; %s of CPU profile, a pass every %s", num(p.Objects), secs(p.WindowSeconds), p.Interval))
	}
	if a := r.Attach; a != nil {
		row("attach latency p50 / p99 / max under creation load", fmt.Sprintf("%s / %s / %s", ms(a.P50), ms(a.P99), ms(a.Max)), fmt.Sprintf("%s objects created at %.0f/s into a cluster of %s guarded objects; attached by %s", num(a.Objects), a.Rate, num(s.Guarded), a.Via))
		latencyParts(row, a)
	}
	if a := r.AttachPaced; a != nil {
		row("attach latency p50 / p99 / max, paced", fmt.Sprintf("%s / %s / %s", ms(a.P50), ms(a.P99), ms(a.Max)), fmt.Sprintf("%s objects created at %.1f/s, one at a time, into the same cluster", num(a.Objects), a.Rate))
		latencyParts(row, a)
	}
	webhookRows(row, r.Webhook)
	if d := r.Drain; d != nil {
		row("namespace deletion drain", secs(d.Seconds), fmt.Sprintf("%s guarded ConfigMaps in the namespace, %s more guarded elsewhere", num(d.Objects), num(s.Guarded-d.Objects)))
		row("API requests of the drain", fmt.Sprintf("%s (%.2f per object)", num(int(d.Requests)), ratio(d.Requests, float64(d.Objects))), "apiserver_request_total delta, every client: "+top(d.Writes, 4))
	}
	fmt.Fprintln(w)
	if len(r.Growth) > 0 {
		fmt.Fprintf(w, "Policy reconcile cost as policies grow (TeardownPolicies added to a running controller, one per namespace, no objects yet):\n\n")
		fmt.Fprintf(w, "| policies | added | to all Ready | reconciles | mean reconcile | controller CPU | CPU per policy added |\n|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, g := range r.Growth {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f s | %s |\n", num(g.Policies), num(g.Added), secs(g.Seconds), num(int(g.Reconciles)),
				ms(g.MeanReconcile()), g.CPUSeconds, ms(g.PerPolicyCPU()))
		}
		fmt.Fprintln(w)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(w, "- FAILED: %s\n", f)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
}

// latencyParts writes a row per part of a latency and one of its queue.
func latencyParts(row func(measure, value, load string), a *Latency) {
	for _, p := range a.Parts {
		row("&nbsp;&nbsp;of which "+p.Name, fmt.Sprintf("%s / %s / %s", ms(p.P50), ms(p.P99), ms(p.Max)), "each part's own percentiles")
	}
	if q := a.Queue; q != nil {
		row("&nbsp;&nbsp;controller's attach queue", fmt.Sprintf("mean wait %s, mean reconcile %s", ms(q.MeanWait()), ms(q.MeanReconcile())),
			fmt.Sprintf("%s adds, %s reconciles, depth at most %.0f (%d samples)", num(int(q.Adds)), num(int(q.Reconciles)), q.MaxDepth, q.Samples))
	}
	if a.Seconds > 0 {
		row("&nbsp;&nbsp;controller CPU", fmt.Sprintf("%.2f s in %s (%.0f%% of a core)", a.ControllerCPU, secs(a.Seconds), 100*ratio(a.ControllerCPU, a.Seconds)), "from the first create to the last key seen")
	}
	if t := a.Server; t != nil {
		row("&nbsp;&nbsp;API server, ConfigMap create / PATCH", fmt.Sprintf("mean %s / %s", ms(t.MeanCreate()), ms(t.MeanPatch())),
			fmt.Sprintf("%s creates, %s PATCHes (apiserver_request_duration_seconds)", num(int(t.Creates)), num(int(t.Patches))))
	}
}

func passValue(p *PassCost) string {
	return fmt.Sprintf("%s per pass (%.2f s in %.1f passes)", ms(p.PerPass()), p.CPUSeconds, p.Passes)
}

// top names the n largest entries of m, largest first.
func top(m map[string]float64, n int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := []string{}
	for _, k := range keys[:min(n, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %s", k, num(int(m[k]))))
	}
	return strings.Join(parts, ", ")
}

// num writes n with thousands separators.
func num(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + num(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func secs(s float64) string {
	if s >= 100 {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

func ms(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.1f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
