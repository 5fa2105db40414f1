/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package waits

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Causes of a wake, the cause label of teardown_wait_wakes_total.
const (
	causeEvent        = "event"
	causeTimer        = "timer"
	causeWatchStarted = "watch-started"
)

var (
	wakes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "teardown_wait_wakes_total",
		Help: "Cleanups of targets woken because an object a pending wait or delete step depends on changed (cause event), by the safety net or a wake postponed to space them (cause timer), or because the watch of a kind they registered on while it was starting has started (cause watch-started).",
	}, []string{"cause"})
	registered = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "teardown_wait_registered_targets",
		Help: "Targets whose pending wait or delete step is registered to be woken by a watch.",
	})
	watchedKinds = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "teardown_wait_watched_kinds",
		Help: "Kinds watched on behalf of pending wait and delete steps.",
	})
)

// Collectors returns the registry's metrics, registered with
// controller-runtime's metrics.Registry already.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{wakes, registered, watchedKinds}
}

func init() {
	ctrlmetrics.Registry.MustRegister(Collectors()...)
}
