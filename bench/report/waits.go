/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package report

import (
	"fmt"
	"io"
)

// Wait scenarios: how soon a target whose cleanup waits on its users goes
// once the last user is gone.
const (
	// WaitEvents: a wait step size(objects) == 0 on the users, with
	// event-driven waits (the default).
	WaitEvents = "wait-events"
	// WaitPolling: the same with --event-driven-waits=false.
	WaitPolling = "wait-polling"
	// WaitUnused: the unused step, ServiceAccount targets used by pods.
	WaitUnused = "unused"
)

// WaitScenarios lists the wait scenarios in display order.
var WaitScenarios = []string{WaitEvents, WaitPolling, WaitUnused}

// DescribeWait says what a wait scenario is.
var DescribeWait = map[string]string{
	WaitEvents:  "ClusterTeardownPolicy, ConfigMap targets, wait step size(objects) == 0 on the ConfigMaps labelled as users in the target's namespace; event-driven waits",
	WaitPolling: "the same with --event-driven-waits=false: the step checks every 2 s",
	WaitUnused:  "ClusterTeardownPolicy, ServiceAccount targets, unused: {} step; the users are pods running as the ServiceAccount",
}

// Wait loads.
const (
	// LoadLight: targets torn down one at a time, the last user deleted at
	// a random moment up to 2 s after the target's cleanup is pending.
	LoadLight = "light"
	// LoadAtOnce: every target pending, then every user deleted at once.
	LoadAtOnce = "at once"
)

// WaitLatency is the latency from the last user's deletion (its DELETE
// sent) to the target's removal (the watch's DELETED event).
type WaitLatency struct {
	Scenario string  `json:"scenario"`
	Load     string  `json:"load"`
	Targets  int     `json:"targets"`
	P50      float64 `json:"p50Seconds"`
	P99      float64 `json:"p99Seconds"`
	Max      float64 `json:"maxSeconds"`
	// Seconds is from the first user's deletion to the last target gone.
	Seconds float64 `json:"seconds"`
	// PollingOverP50 and PollingOverP99 are the polling scenario's
	// percentiles over this one's, at the same load in the same run: how
	// many times sooner targets go.
	PollingOverP50 float64 `json:"pollingOverP50,omitempty"`
	PollingOverP99 float64 `json:"pollingOverP99,omitempty"`
	// WaitingRequests is the API server's requests per second (every
	// verb but WATCH, from every client) while every target waits, before
	// any user goes: what waiting costs. Measured at LoadAtOnce only.
	WaitingRequests float64 `json:"waitingRequestsPerSecond,omitempty"`
	// WaitingBy splits WaitingRequests per "VERB resource".
	WaitingBy map[string]float64 `json:"waitingRequestsPerSecondBy,omitempty"`
	// ReleasedEarly counts targets gone at their cleanup's first check,
	// although their user existed when they were deleted; they are left
	// out of the percentiles.
	ReleasedEarly int `json:"releasedEarly,omitempty"`
	// LoadAverage is the machine's 1-minute load average when the
	// measurement ended.
	LoadAverage float64 `json:"loadAverage1m"`
	// Skipped says why the scenario was not measured.
	Skipped string `json:"skipped,omitempty"`
}

// UnusedRSS is the controller's marginal memory for watching pods for
// references: the same controller with and without a policy with an unused
// step, with the same pods in the cluster.
type UnusedRSS struct {
	Pods   int     `json:"pods"`
	None   int64   `json:"rssWithoutBytes"`
	With   int64   `json:"rssWithBytes"`
	PerPod float64 `json:"marginalBytesPerPod"`
	// AnonNone, AnonWith and AnonPerPod are the same for RssAnon (without
	// the binary's pages in the page cache).
	AnonNone   int64   `json:"rssAnonWithoutBytes"`
	AnonWith   int64   `json:"rssAnonWithBytes"`
	AnonPerPod float64 `json:"marginalAnonBytesPerPod"`
	HeapNone   int64   `json:"heapInuseWithoutBytes"`
	HeapWith   int64   `json:"heapInuseWithBytes"`
	HeapPerPod float64 `json:"heapBytesPerPod"`
	Skipped    string  `json:"skipped,omitempty"`
}

// FillWaitRatios sets each wait latency's ratios against the polling
// scenario at the same load.
func (r *Results) FillWaitRatios() {
	for i := range r.Waits {
		w := &r.Waits[i]
		if w.Scenario == WaitPolling || w.Skipped != "" {
			continue
		}
		for _, p := range r.Waits {
			if p.Scenario == WaitPolling && p.Load == w.Load && p.Skipped == "" {
				w.PollingOverP50 = ratio(p.P50, w.P50)
				w.PollingOverP99 = ratio(p.P99, w.P99)
			}
		}
	}
}

// waitsMarkdown writes the wait latencies and the unused step's memory.
func waitsMarkdown(w io.Writer, r *Results) {
	if len(r.Waits) > 0 {
		fmt.Fprintln(w, "| wait scenario | load | targets | p50 | p99 | max | polling p50 / p50 | polling p99 / p99 | API requests/s while waiting | load average |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, l := range r.Waits {
			if l.Skipped != "" {
				fmt.Fprintf(w, "| %s | %s | – | skipped: %s | | | | | | |\n", l.Scenario, l.Load, l.Skipped)
				continue
			}
			waiting := "–"
			if l.WaitingRequests > 0 {
				waiting = fmt.Sprintf("%.0f", l.WaitingRequests)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f |\n", l.Scenario, l.Load, Thousands(l.Targets),
				Seconds(l.P50), Seconds(l.P99), Seconds(l.Max), times(l.PollingOverP50), times(l.PollingOverP99), waiting, l.LoadAverage)
		}
		for _, l := range r.Waits {
			if l.ReleasedEarly > 0 {
				fmt.Fprintf(w, "%s, %s: %d target(s) released at their first check although their user existed; left out above.\n", l.Scenario, l.Load, l.ReleasedEarly)
			}
		}
		fmt.Fprintln(w)
	}
	if u := r.UnusedRSS; u != nil {
		if u.Skipped != "" {
			fmt.Fprintf(w, "Unused step, memory: skipped: %s\n\n", u.Skipped)
			return
		}
		fmt.Fprintln(w, "| unused step: pods in the cluster | RSS without the policy | RSS with it | marginal RSS/pod | marginal RssAnon/pod | live heap/pod |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|")
		fmt.Fprintf(w, "| %s | %.1f MiB | %.1f MiB | %.0f B | %.0f B | %.0f B |\n\n", Thousands(u.Pods), mib(u.None), mib(u.With), u.PerPod, u.AnonPerPod, u.HeapPerPod)
	}
}
