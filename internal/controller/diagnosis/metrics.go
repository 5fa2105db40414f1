/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// blockedObjects is set by the Diagnoser after each pass: one series per
// policy and root cause, deleted when no object has it any more.
var blockedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "teardown_blocked_objects",
	Help: "Guarded objects terminating longer than --diagnose-after, by policy (namespace/name, the name of a ClusterTeardownPolicy, empty for --diagnose-kinds) and the root cause the controller's diagnosis found.",
}, []string{"policy", "cause"})

// Collectors returns the diagnosis' gauges, registered with
// controller-runtime's metrics.Registry already.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{blockedObjects}
}

func init() {
	ctrlmetrics.Registry.MustRegister(Collectors()...)
}
