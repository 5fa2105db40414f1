/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package report holds the benchmark's results, checks them against the
// targets of the benchmark issue, and renders them as a markdown table,
// JSON and a PNG chart. It is pure logic, unit-tested without a cluster.
package report

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Scenarios, in the order they are shown.
const (
	Raw              = "raw-limit"
	Teardown         = "teardown"
	TeardownWebhook  = "teardown-webhook"
	TeardownDeclared = "teardown-declared"
	BaselineDefault  = "baseline-default"
	BaselineTuned    = "baseline-tuned"
)

// TeardownBefore is the teardown-controller of an earlier commit, measured
// for memory beside the current one (bench -rss-before).
const TeardownBefore = "teardown-before"

// Scenarios lists every scenario in display order.
var Scenarios = []string{Raw, Teardown, TeardownWebhook, TeardownDeclared, BaselineDefault, BaselineTuned}

// Describe says what a scenario is, for the table's legend.
var Describe = map[string]string{
	Raw:              "a client with no controller: DELETE then a guarded JSON patch removing the finalizer, per object, at the best concurrency tried",
	Teardown:         "teardown-controller, TeardownPolicy with no steps (attach: Automatic)",
	TeardownWebhook:  "teardown-controller, TeardownPolicy with one webhook step that answers Success at once (attach: Automatic)",
	TeardownDeclared: "teardown-controller, TeardownPolicy with no steps, attach: Declared (objects are created carrying the key)",
	BaselineDefault:  "kubebuilder-book reconciler (AddFinalizer/RemoveFinalizer + Update, full-object cache), settings as generated: 1 worker, ctrl.GetConfigOrDie client",
	BaselineTuned:    "the same reconciler with more workers and raised client QPS/burst",
}

// Results is one benchmark run.
type Results struct {
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	Machine  Machine   `json:"machine"`
	Settings Settings  `json:"settings"`
	Runs     []Run     `json:"runs"`
	RSS      []RSS     `json:"rss,omitempty"`
	// Waits and UnusedRSS are the wait scenarios (waits.go).
	Waits     []WaitLatency `json:"waits,omitempty"`
	UnusedRSS *UnusedRSS    `json:"unusedRSS,omitempty"`
	Targets   []Target      `json:"targets"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs        int     `json:"cpus"`
	MemoryGiB   float64 `json:"memoryGiB"`
	CPUModel    string  `json:"cpuModel,omitempty"`
	Kernel      string  `json:"kernel,omitempty"`
	GoVersion   string  `json:"goVersion"`
	Kubernetes  string  `json:"kubernetes"`
	Etcd        string  `json:"etcd,omitempty"`
	LoadAtStart float64 `json:"loadAverage1mAtStart"`
	LoadAtEnd   float64 `json:"loadAverage1mAtEnd"`
}

// Settings are the flags of the run.
type Settings struct {
	Ns                  []int  `json:"n"`
	Runs                int    `json:"runs"`
	DataBytes           int    `json:"dataBytes"`
	DriverWorkers       int    `json:"driverWorkers"`
	RawConcurrency      []int  `json:"rawConcurrency"`
	TeardownWorkers     int    `json:"teardownWorkers"`
	TunedWorkers        int    `json:"tunedBaselineWorkers"`
	TunedQPS            int    `json:"tunedBaselineQPS"`
	RSSObjects          int    `json:"rssObjects"`
	RSSDataBytes        int    `json:"rssDataBytes"`
	RSSSettle           string `json:"rssSettle"`
	ClientRateLimitNote string `json:"clientRateLimitNote"`
	// Experiments: extra environment and flags of the controllers.
	ChildEnv     []string `json:"childEnv,omitempty"`
	TeardownArgs []string `json:"teardownArgs,omitempty"`
	// RSSBefore is the checkout measured as TeardownBefore, with its commit.
	RSSBefore string `json:"rssBefore,omitempty"`
}

// Run is one scenario at one N.
type Run struct {
	Scenario string `json:"scenario"`
	N        int    `json:"n"`
	// Workers is the controller's reconcile workers, or the raw client's
	// concurrency.
	Workers int `json:"workers"`
	// Rounds are the objects/s of every round when there were several; the
	// run shown is the median one.
	Rounds []float64 `json:"rounds,omitempty"`
	// Tried is the rate of every concurrency the raw client tried.
	Tried map[int]float64 `json:"tried,omitempty"`
	// Seconds runs from the first DELETE sent to the last object gone.
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"objectsPerSecond"`
	P50        float64 `json:"p50Seconds"`
	P99        float64 `json:"p99Seconds"`
	Max        float64 `json:"maxSeconds"`
	// AttachWrites and RemoveWrites are the writes per object on the
	// target objects by whoever finalizes them (the controller, or the raw
	// client's patches), from the API server's metrics, conflicts included.
	AttachWrites float64 `json:"attachWritesPerObject"`
	RemoveWrites float64 `json:"removeWritesPerObject"`
	// Writes and Conflicts count those writes; Conflicts ended in 409 or 422.
	Writes        float64 `json:"writes"`
	Conflicts     float64 `json:"conflicts"`
	ConflictShare float64 `json:"conflictShare"`
	// DriverWrites are the benchmark's own creates and deletes, seen by the
	// API server: a check that the subtraction is right.
	DriverWrites float64 `json:"driverWrites"`
	// OtherWrites are every other write in the attach and delete phases,
	// per verb and resource (Events, policy status, leases...).
	OtherWrites map[string]float64 `json:"otherWrites,omitempty"`
	// Reads are the reads in the delete phase, per verb and resource.
	Reads map[string]float64 `json:"deletePhaseReads,omitempty"`
	// EtcdRequests are kube-apiserver's requests to etcd on the target
	// objects in the delete phase, per operation: gets beyond one per
	// object are re-reads after a stale cached copy.
	EtcdRequests map[string]float64 `json:"deletePhaseEtcdRequests,omitempty"`
	// WebhookCalls and WebhookConnections count the webhook step's calls
	// and the TCP connections they were made on, in the delete phase.
	WebhookCalls       int64 `json:"webhookCalls,omitempty"`
	WebhookConnections int64 `json:"webhookConnections,omitempty"`
	// DeletesSentSeconds is how long the driver took to send every DELETE.
	DeletesSentSeconds float64 `json:"deletesSentSeconds"`
	// Ratios to the raw limit and the baselines of the same run.
	VsRaw             float64 `json:"vsRaw,omitempty"`
	VsBaselineDefault float64 `json:"vsBaselineDefault,omitempty"`
	VsBaselineTuned   float64 `json:"vsBaselineTuned,omitempty"`
	// CPUSeconds is the CPU time each process used in the delete phase:
	// etcd, kube-apiserver, kube-controller-manager, the benchmark driver
	// and the controller.
	CPUSeconds map[string]float64 `json:"cpuSeconds,omitempty"`
}

// RSS is the marginal memory of one controller.
type RSS struct {
	Controller string `json:"controller"`
	Objects    int    `json:"objects"`
	DataBytes  int    `json:"dataBytes"`
	// Bytes of VmRSS with no guarded object and with Objects of them.
	None    int64 `json:"rssNoneBytes"`
	Guarded int64 `json:"rssGuardedBytes"`
	// PerObject is (Guarded-None)/Objects, in bytes.
	PerObject float64 `json:"perObjectBytes"`
	// The same of RssAnon: without the pages of the binary mapped from the
	// page cache, which are code and do not grow with objects, but vary
	// with readahead by megabytes from one start to the next.
	AnonNone      int64   `json:"rssAnonNoneBytes"`
	AnonGuarded   int64   `json:"rssAnonGuardedBytes"`
	AnonPerObject float64 `json:"anonPerObjectBytes"`
	// Floor is (RSS-RSS with none)/Objects after debug.FreeOSMemory: no
	// garbage and no free memory left; what the process could shrink to.
	FloorNone      int64   `json:"rssFloorNoneBytes"`
	FloorGuarded   int64   `json:"rssFloorGuardedBytes"`
	FloorPerObject float64 `json:"rssFloorPerObjectBytes"`
	// Live heap (HeapInuse after a forced GC) with none and with Objects.
	HeapNone      int64   `json:"heapInuseNoneBytes"`
	HeapGuarded   int64   `json:"heapInuseGuardedBytes"`
	HeapPerObject float64 `json:"heapPerObjectBytes"`
	// VsBaseline is the baseline's PerObject over this one's.
	VsBaseline float64 `json:"baselineOverThis,omitempty"`
}

// Find returns the run of scenario at n.
func (r *Results) Find(scenario string, n int) (Run, bool) {
	for _, run := range r.Runs {
		if run.Scenario == scenario && run.N == n {
			return run, true
		}
	}
	return Run{}, false
}

// FindRSS returns the RSS measurement of a controller.
func (r *Results) FindRSS(controller string) (RSS, bool) {
	for _, m := range r.RSS {
		if m.Controller == controller {
			return m, true
		}
	}
	return RSS{}, false
}

// FillRatios sets every run's ratios to the raw limit and the baselines of
// the same N, and the RSS ratio.
func (r *Results) FillRatios() {
	for i := range r.Runs {
		run := &r.Runs[i]
		run.VsRaw, run.VsBaselineDefault, run.VsBaselineTuned = 0, 0, 0
		if raw, ok := r.Find(Raw, run.N); ok && run.Scenario != Raw {
			run.VsRaw = ratio(run.Throughput, raw.Throughput)
		}
		if b, ok := r.Find(BaselineDefault, run.N); ok && run.Scenario != BaselineDefault {
			run.VsBaselineDefault = ratio(run.Throughput, b.Throughput)
		}
		if b, ok := r.Find(BaselineTuned, run.N); ok && run.Scenario != BaselineTuned {
			run.VsBaselineTuned = ratio(run.Throughput, b.Throughput)
		}
	}
	if b, ok := r.FindRSS(BaselineTuned); ok {
		for i := range r.RSS {
			if r.RSS[i].Controller != BaselineTuned {
				r.RSS[i].VsBaseline = ratio(b.PerObject, r.RSS[i].PerObject)
			}
		}
	}
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0 // unknown; JSON has no infinity
	}
	return a / b
}

// Median returns the run of scenario with the median throughput among
// runs, with every round's throughput in Rounds.
func Median(runs []Run, scenario string) (Run, bool) {
	var of []Run
	for _, r := range runs {
		if r.Scenario == scenario {
			of = append(of, r)
		}
	}
	if len(of) == 0 {
		return Run{}, false
	}
	slices.SortStableFunc(of, func(a, b Run) int { return cmp.Compare(a.Throughput, b.Throughput) })
	m := of[(len(of)-1)/2]
	if len(of) > 1 {
		m.Rounds = nil
		for _, r := range runs {
			if r.Scenario == scenario {
				m.Rounds = append(m.Rounds, r.Throughput)
			}
		}
	}
	return m, true
}

// Percentile returns the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method, in seconds.
func Percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1].Seconds()
}
