/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package scale holds the results of the scale benchmark (bench/cmd/scale,
// make bench-scale) and the pure parts of measuring them: percentiles, the
// CPU a profile spends under one function, the markdown table.
package scale

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Results is everything one run measured, written as results.json.
type Results struct {
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	Machine  string    `json:"machine"`
	Size     Size      `json:"size"`
	// Tuning lists the control plane's flags the run set, and why.
	Tuning []string `json:"tuning"`
	// Growth is the policy controller's cost as policies are added.
	Growth    []GrowthStep `json:"growth,omitempty"`
	Create    *Phase       `json:"create,omitempty"`
	ColdStart *ColdStart   `json:"coldStart,omitempty"`
	Status    *PassCost    `json:"statusPass,omitempty"`
	Diagnosis *PassCost    `json:"diagnosisPass,omitempty"`
	Attach    *Latency     `json:"attachUnderLoad,omitempty"`
	// AttachPaced is the same latency for objects created a few a second:
	// what one object waits when nothing queues.
	AttachPaced *Latency `json:"attachPaced,omitempty"`
	Drain       *Drain   `json:"namespaceDrain,omitempty"`

	// Webhook is the attach-at-create webhook under a burst of creates.
	Webhook *WebhookLatency `json:"attachWebhook,omitempty"`
	// Failed lists the phases that did not finish, with why.
	Failed []string `json:"failed,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// Size is the load of the run.
type Size struct {
	Namespaces      int `json:"namespaces"`
	ObjectsPerNs    int `json:"objectsPerNamespace"`
	BigNsObjects    int `json:"bigNamespaceObjects"`
	Pods            int `json:"pods"`
	Policies        int `json:"teardownPolicies"`
	ClusterPolicies int `json:"clusterTeardownPolicies"`
	// Guarded is every object a policy guards: the ConfigMaps of the
	// namespaces, the big namespace's, and the cluster policy's
	// ServiceAccounts.
	Guarded int `json:"guarded"`
}

// GrowthStep is one batch of policies added to a running controller.
type GrowthStep struct {
	Policies         int     `json:"policies"` // in the cluster after the batch
	Added            int     `json:"added"`
	Seconds          float64 `json:"seconds"` // from the first create to all Ready
	Reconciles       float64 `json:"reconciles"`
	ReconcileSeconds float64 `json:"reconcileSeconds"` // sum of the reconciles' wall time
	CPUSeconds       float64 `json:"cpuSeconds"`       // the controller's, over the batch
}

// PerPolicyCPU is the controller CPU the batch cost per policy added.
func (g GrowthStep) PerPolicyCPU() float64 { return ratio(g.CPUSeconds, float64(g.Added)) }

// MeanReconcile is the mean wall time of one policy reconcile in the batch.
func (g GrowthStep) MeanReconcile() float64 { return ratio(g.ReconcileSeconds, g.Reconciles) }

// Phase is work done at a rate.
type Phase struct {
	Objects int     `json:"objects"`
	Seconds float64 `json:"seconds"`
}

// Rate is objects per second.
func (p Phase) Rate() float64 { return ratio(float64(p.Objects), p.Seconds) }

// ColdStart is a controller started with every object and policy in place.
type ColdStart struct {
	Phase
	CPUSeconds float64 `json:"cpuSeconds"`
	RSS        int64   `json:"rssBytes"`       // VmRSS once settled
	HeapInuse  int64   `json:"heapInuseBytes"` // after a forced GC
	PeakRSS    int64   `json:"peakRSSBytes"`   // VmHWM
}

// PassCost is the CPU a profile of the running controller spent under one
// function (a periodic pass) over a window.
type PassCost struct {
	Function      string  `json:"function"`
	WindowSeconds float64 `json:"windowSeconds"`
	Interval      string  `json:"interval"`
	Passes        float64 `json:"passes"` // expected in the window
	CPUSeconds    float64 `json:"cpuSeconds"`
	ProfileTotal  float64 `json:"profileTotalSeconds"` // every sample of the window
	Objects       int     `json:"objects"`             // what one pass walks
}

// PerPass is the CPU of one pass.
func (p PassCost) PerPass() float64 { return ratio(p.CPUSeconds, p.Passes) }

// Latency is how long objects created at full rate took to carry a key.
type Latency struct {
	Objects int     `json:"objects"`
	Rate    float64 `json:"createRate"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	Via     string  `json:"via"` // what attached: the controller's watch or the webhook
	// Parts splits each object's latency where the benchmark can see it,
	// each part's percentiles taken on its own.
	Parts []Part `json:"parts,omitempty"`
	// Queue is the controller's attach queue over the same objects.
	Queue *Queue `json:"queue,omitempty"`
	// ControllerCPU is the CPU the controller process used from the first
	// create to the last key seen, and Seconds that time.
	ControllerCPU float64 `json:"controllerCPUSeconds,omitempty"`
	Seconds       float64 `json:"seconds,omitempty"`
	// Server is what the API server says it took to serve the creates and
	// the controller's PATCHes of ConfigMaps over the same time
	// (apiserver_request_duration_seconds).
	Server *ServerTimes `json:"server,omitempty"`
}

// ServerTimes are request counts and the sums of their durations, as the
// API server measured them.
type ServerTimes struct {
	Creates       float64 `json:"creates"`
	CreateSeconds float64 `json:"createSeconds"`
	Patches       float64 `json:"patches"`
	PatchSeconds  float64 `json:"patchSeconds"`
}

// MeanCreate is the mean time the API server took to serve a create.
func (t ServerTimes) MeanCreate() float64 { return ratio(t.CreateSeconds, t.Creates) }

// MeanPatch is the mean time the API server took to serve a PATCH.
func (t ServerTimes) MeanPatch() float64 { return ratio(t.PatchSeconds, t.Patches) }

// Sub returns t less before.
func (t ServerTimes) Sub(before ServerTimes) ServerTimes {
	return ServerTimes{Creates: t.Creates - before.Creates, CreateSeconds: t.CreateSeconds - before.CreateSeconds,
		Patches: t.Patches - before.Patches, PatchSeconds: t.PatchSeconds - before.PatchSeconds}
}

// Part is one stretch of the objects' latencies.
type Part struct {
	Name string  `json:"name"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// PartOf returns the percentiles of values as the part name.
func PartOf(name string, values []float64) Part {
	return Part{Name: name, P50: Percentile(values, 50), P99: Percentile(values, 99), Max: Percentile(values, 100)}
}

// Queue is what the controller's workqueue metrics (its "target-attach"
// controller) say over a phase: deltas of its counters and histograms, and
// the depth sampled through it.
type Queue struct {
	Adds             float64 `json:"adds"`
	Gets             float64 `json:"gets"` // items handed to a worker: the wait histogram's count
	Reconciles       float64 `json:"reconciles"`
	WaitSeconds      float64 `json:"waitSeconds"`      // sum of workqueue_queue_duration_seconds
	ReconcileSeconds float64 `json:"reconcileSeconds"` // sum of controller_runtime_reconcile_time_seconds
	MaxDepth         float64 `json:"maxDepth"`
	Samples          int     `json:"depthSamples"`
	// ReconcilesUnder counts the reconciles that took at most each of
	// ReconcileBounds (the histogram's cumulative buckets), so that cheap
	// reconciles and ones that wrote are told apart.
	ReconcilesUnder []float64 `json:"reconcilesUnder,omitempty"`
}

// ReconcileBounds are the le of controller_runtime_reconcile_time_seconds
// that Queue.ReconcilesUnder reads.
var ReconcileBounds = []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1"}

// Sub returns q's counters less before's (MaxDepth and Samples are q's).
func (q Queue) Sub(before Queue) Queue {
	q.Adds -= before.Adds
	q.Gets -= before.Gets
	q.Reconciles -= before.Reconciles
	q.WaitSeconds -= before.WaitSeconds
	q.ReconcileSeconds -= before.ReconcileSeconds
	q.ReconcilesUnder = slices.Clone(q.ReconcilesUnder)
	for i := range min(len(q.ReconcilesUnder), len(before.ReconcilesUnder)) {
		q.ReconcilesUnder[i] -= before.ReconcilesUnder[i]
	}
	return q
}

// MeanWait is the mean time an item waited in the queue.
func (q Queue) MeanWait() float64 { return ratio(q.WaitSeconds, q.Gets) }

// MeanReconcile is the mean wall time of one reconcile.
func (q Queue) MeanReconcile() float64 { return ratio(q.ReconcileSeconds, q.Reconciles) }

// Drain is one namespace of guarded objects deleted.
type Drain struct {
	Objects  int                `json:"objects"`
	Seconds  float64            `json:"seconds"` // DELETE to the namespace gone
	Requests float64            `json:"requests"`
	Writes   map[string]float64 `json:"writes"`
	Reads    map[string]float64 `json:"reads"`
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Percentile returns the p-th percentile (0..100) of values by the
// nearest-rank method, without changing values; 0 when it is empty.
func Percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// showing is pprof -top's summary line.
var showing = regexp.MustCompile(`Showing nodes accounting for ([^,]+), [0-9.]+% of (\S+) total`)

// ErrNoSamples is FocusedCPU's answer for a profile where the focus
// matched nothing.
var ErrNoSamples = errors.New("no samples under the focus")

// FocusedCPU reads `go tool pprof -top -nodecount=N -focus=F`'s output and
// returns the seconds spent under the focus and in the whole profile.
// pprof says "no samples" or prints no summary when the focus matches
// nothing.
func FocusedCPU(top string) (focused, total float64, err error) {
	m := showing.FindStringSubmatch(top)
	if m == nil {
		if strings.Contains(top, "no samples") || strings.Contains(top, "matched no samples") {
			return 0, 0, ErrNoSamples
		}
		return 0, 0, fmt.Errorf("no summary line in pprof's output: %q", firstLine(top))
	}
	if focused, err = pprofDuration(m[1]); err == nil {
		total, err = pprofDuration(m[2])
	}
	return focused, total, err
}

// pprofDuration parses pprof's "1.23s", "450ms", "10us", "0".
func pprofDuration(s string) (float64, error) {
	if s == "0" {
		return 0, nil
	}
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"mins", 60}, {"hrs", 3600}, {"ms", 1e-3}, {"us", 1e-6}, {"µs", 1e-6}, {"ns", 1e-9}, {"s", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("pprof duration %q: %w", s, err)
			}
			return f * u.scale, nil
		}
	}
	return 0, fmt.Errorf("pprof duration %q: unknown unit", s)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
