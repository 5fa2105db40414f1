/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package scale

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// WebhookLatency is the attach-at-create webhook measured under a burst of
// creates: what the API server says the call took, what the driver's
// CREATE took with the webhook and without it, and whether the answers
// carried the key.
type WebhookLatency struct {
	// Webhook is the webhook's name in the configuration (the one for
	// TeardownPolicies: the benchmark's ConfigMaps are guarded by those).
	Webhook string `json:"webhook"`
	Objects int    `json:"objects"` // created in each burst
	Workers int    `json:"workers"`
	// Guarded is how many guarded ConfigMaps were in the cluster before
	// the bursts.
	Guarded int `json:"guardedBefore"`
	// With is the driver's CREATE (sent to answered) through the webhook;
	// Without the same burst of objects the webhook skips (an objectSelector),
	// with the same controller running.
	With        Part    `json:"createWith"`
	Without     Part    `json:"createWithout"`
	RateWith    float64 `json:"createRateWith"`
	RateWithout float64 `json:"createRateWithout"`
	// CarriedKey counts the CREATE answers of the burst through the webhook
	// that carried their policy's key; CarriedWithout those of the other
	// burst (0 unless the objectSelector failed).
	CarriedKey     int `json:"carriedKey"`
	CarriedWithout int `json:"carriedKeyWithout"`
	// Calls, P50, P99 and Mean are the API server's
	// apiserver_admission_webhook_admission_duration_seconds for the
	// webhook over the burst through it: the count of the buckets' delta,
	// its quantiles interpolated linearly within the buckets (bounds 5 ms,
	// 25 ms, 100 ms, 500 ms, 1 s, ...), and sum/count.
	Calls float64 `json:"calls"`
	// CallsWithout is the same count over the burst the webhook should
	// skip: 0 shows the objectSelector held.
	CallsWithout float64            `json:"callsWithout"`
	P50          float64            `json:"p50"`
	P99          float64            `json:"p99"`
	Mean         float64            `json:"mean"`
	Buckets      map[string]float64 `json:"buckets"` // the delta, by upper bound (le)
	// Requests is apiserver_admission_webhook_request_total's delta by
	// "code=…,rejected=…"; Rejections apiserver_admission_webhook_rejection_count's;
	// FailOpen apiserver_admission_webhook_fail_open_count's (errors let
	// through by failurePolicy Ignore).
	Requests   map[string]float64 `json:"requests"`
	Rejections float64            `json:"rejections"`
	FailOpen   float64            `json:"failOpen"`
	// HandlerCalls and HandlerMean are the controller's own
	// controller_runtime_webhook_latency_seconds for the webhook's path
	// (the handler, without TLS and the network): count and sum/count.
	HandlerCalls float64 `json:"handlerCalls"`
	HandlerMean  float64 `json:"handlerMean"`
	// HandleCPU is the controller's CPU under the handler
	// (admit.(*Attacher).Handle) in a profile of ProfileSeconds from the
	// burst's start, ProfileCPU all of the controller's in it.
	ProfileSeconds float64 `json:"profileSeconds"`
	HandleCPU      float64 `json:"handleCPUSeconds"`
	ProfileCPU     float64 `json:"profileCPUSeconds"`
}

// webhookRows writes the rows of the webhook's latency.
func webhookRows(row func(measure, value, load string), w *WebhookLatency) {
	if w == nil {
		return
	}
	load := fmt.Sprintf("%s ConfigMaps created at %.0f/s (%d workers) into a cluster of %s guarded ConfigMaps", num(w.Objects), w.RateWith, w.Workers, num(w.Guarded))
	p99 := msOrNA(w.P99, w.Calls)
	if w.Calls > 0 && w.P99 > w.With.Max {
		// A call never outlasts the create that waits for it: the
		// interpolation spread the bucket's calls up to its bound.
		p99 = fmt.Sprintf("≤ %s (interpolated %s, past the slowest CREATE)", ms(w.With.Max), p99)
	}
	row("attach webhook latency p50 / p99 (API server), mean", fmt.Sprintf("%s / %s, mean %s", msOrNA(w.P50, w.Calls), p99, msOrNA(w.Mean, w.Calls)),
		fmt.Sprintf("%s; %s calls of %s, apiserver_admission_webhook_admission_duration_seconds delta, percentiles interpolated within its buckets (5, 25, 100, 500 ms)", load, num(int(w.Calls)), w.Webhook))
	row("&nbsp;&nbsp;of which the handler (controller), mean", ms(w.HandlerMean), fmt.Sprintf("%s calls, controller_runtime_webhook_latency_seconds (no TLS, no network; wall time, waits for CPU included)", num(int(w.HandlerCalls))))
	if w.ProfileSeconds > 0 {
		row("&nbsp;&nbsp;the handler's CPU per call", ms(ratio(w.HandleCPU, w.Calls)), fmt.Sprintf("%.2f s under admit.(*Attacher).Handle of the controller's %.2f s in a %s CPU profile from the burst's start", w.HandleCPU, w.ProfileCPU, secs(w.ProfileSeconds)))
	}
	row("CREATE p50 / p99 / max with the webhook", fmt.Sprintf("%s / %s / %s", ms(w.With.P50), ms(w.With.P99), ms(w.With.Max)), load+"; the driver's sent to answered")
	row("CREATE p50 / p99 / max without it", fmt.Sprintf("%s / %s / %s", ms(w.Without.P50), ms(w.Without.P99), ms(w.Without.Max)),
		fmt.Sprintf("the same burst just before (%.0f/s), objects the webhook's objectSelector skips, same controller", w.RateWithout))
	row("CREATE answers carrying the key", fmt.Sprintf("%s of %s (%.1f%%)", num(w.CarriedKey), num(w.Objects), 100*ratio(float64(w.CarriedKey), float64(w.Objects))),
		fmt.Sprintf("without the webhook: %s answers carried it, %.0f webhook calls", num(w.CarriedWithout), w.CallsWithout))
	row("webhook rejections / failed open", fmt.Sprintf("%.0f / %.0f", w.Rejections, w.FailOpen), "apiserver_admission_webhook_rejection_count, _fail_open_count; calls by code: "+codes(w.Requests))
}

func msOrNA(s, calls float64) string {
	if calls == 0 || math.IsNaN(s) {
		return "n/a"
	}
	return ms(s)
}

func codes(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, num(int(m[k]))))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
