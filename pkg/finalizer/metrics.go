/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	cleanupDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "teardown_finalizer_cleanup_duration_seconds",
		Help:    "Time from deletionTimestamp to the removal of the finalizer, by how it ended (done or released).",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
	}, []string{"finalizer", "outcome"})
	attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "teardown_finalizer_handler_attempts_total",
		Help: "Cleanup handler calls, by the state the handler answered.",
	}, []string{"finalizer", "state"})
	releases = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "teardown_finalizer_releases_total",
		Help: "Finalizers removed without their cleanup, by cause (handler or deadline).",
	}, []string{"finalizer", "cause"})
	unguarded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "teardown_finalizer_unguarded_deletions_total",
		Help: "Objects seen being deleted that never carried the finalizer, so their cleanup did not run.",
	}, []string{"finalizer"})
	writesRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "teardown_finalizer_writes_refused_total",
		Help: "Writes the API server refused for good (an object whose annotations leave no room, one past the storage limit), by what was refused: attach (the object is not guarded) or progress (a cleanup's progress record).",
	}, []string{"finalizer", "write"})
	deadlinesExceeded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "teardown_finalizer_deadlines_exceeded_total",
		Help: "Cleanups whose deadline passed, by the policy applied (Block or Release).",
	}, []string{"finalizer", "policy"})
	patchConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "teardown_finalizer_patch_conflicts_total",
		Help: "Guarded patches refused because the finalizer list changed meanwhile, re-read and retried.",
	}, []string{"op"})

	inProgressDesc = prometheus.NewDesc("teardown_finalizer_cleanups_in_progress",
		"Objects being deleted whose cleanup has not finished.", []string{"finalizer"}, nil)
	oldestDesc = prometheus.NewDesc("teardown_finalizer_cleanup_oldest_age_seconds",
		"Age, since deletionTimestamp, of the oldest cleanup in progress.", []string{"finalizer"}, nil)

	inFlight = newInProgress()
)

// Collectors returns the library's metrics, for callers that serve their own
// Prometheus registry. They are registered with controller-runtime's
// metrics.Registry already.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{cleanupDuration, attempts, releases, unguarded, writesRefused, deadlinesExceeded, patchConflicts, inFlight}
}

func init() {
	ctrlmetrics.Registry.MustRegister(Collectors()...)
}

// inProgress tracks cleanups under way so a scrape can report how many there
// are and how old the oldest is. Entries not touched for staleAfter are
// dropped: their object was finalized elsewhere or stripped by hand.
type inProgress struct {
	mu      sync.Mutex
	entries map[inProgressKey]inProgressEntry
	now     func() time.Time
}

type inProgressKey struct {
	finalizer string
	uid       types.UID
}

type inProgressEntry struct {
	since, seen time.Time
}

const staleAfter = time.Hour

func newInProgress() *inProgress {
	return &inProgress{entries: map[inProgressKey]inProgressEntry{}, now: time.Now}
}

func (p *inProgress) start(finalizer string, uid types.UID, since time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries[inProgressKey{finalizer, uid}] = inProgressEntry{since: since, seen: p.now()}
}

func (p *inProgress) finish(finalizer string, uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.entries, inProgressKey{finalizer, uid})
}

func (p *inProgress) Describe(ch chan<- *prometheus.Desc) {
	ch <- inProgressDesc
	ch <- oldestDesc
}

func (p *inProgress) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	counts := map[string]int{}
	oldest := map[string]time.Time{}
	for k, e := range p.entries {
		if now.Sub(e.seen) > staleAfter {
			delete(p.entries, k)
			continue
		}
		counts[k.finalizer]++
		if o, ok := oldest[k.finalizer]; !ok || e.since.Before(o) {
			oldest[k.finalizer] = e.since
		}
	}
	for f, n := range counts {
		ch <- prometheus.MustNewConstMetric(inProgressDesc, prometheus.GaugeValue, float64(n), f)
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, now.Sub(oldest[f]).Seconds(), f)
	}
}
