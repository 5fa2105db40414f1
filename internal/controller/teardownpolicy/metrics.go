/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// Per-policy gauges, one series per policy (kind, policy_namespace, name): the
// status counts and the Ready condition, as kubectl get shows them, for
// alerts and dashboards. Set when the status is computed, deleted when the
// policy goes.
var (
	// The policy's namespace is policy_namespace, not namespace: Prometheus
	// gives every scraped series its target's namespace (the controller's),
	// and without honorLabels renames a namespace label of the metric to
	// exported_namespace, so alerts and dashboards would see the
	// controller's namespace for every policy.
	policyLabels = []string{"kind", "policy_namespace", "name"}

	policyReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "teardown_policy_ready",
		Help: "1 when the policy's Ready condition is True, else 0.",
	}, policyLabels)
	policyGuarded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "teardown_policy_guarded",
		Help: "Objects in the policy's scope that carry its finalizer (status.guarded).",
	}, policyLabels)
	policyTerminating = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "teardown_policy_terminating",
		Help: "Guarded objects being deleted (status.terminating).",
	}, policyLabels)
	policyBlocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "teardown_policy_blocked",
		Help: "Terminating objects whose cleanup did not finish at its first attempt (status.blocked).",
	}, policyLabels)
	policyRefused = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "teardown_policy_refused",
		Help: "Selected objects on which the API server refuses the attach patch (not guarded) or the progress record (status.refused).",
	}, policyLabels)
)

// Collectors returns the per-policy gauges, registered with
// controller-runtime's metrics.Registry already.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{policyReady, policyGuarded, policyTerminating, policyBlocked, policyRefused}
}

func init() {
	ctrlmetrics.Registry.MustRegister(Collectors()...)
}

// policyMetricLabels are a policy's label values.
func policyMetricLabels(obj client.Object) prometheus.Labels {
	kind := "TeardownPolicy"
	if _, ok := obj.(*teardownv1alpha1.ClusterTeardownPolicy); ok {
		kind = "ClusterTeardownPolicy"
	}
	return prometheus.Labels{"kind": kind, "policy_namespace": obj.GetNamespace(), "name": obj.GetName()}
}

// observePolicy sets the gauges from the status just computed.
func observePolicy(obj client.Object, status *teardownv1alpha1.TeardownPolicyStatus) {
	l := policyMetricLabels(obj)
	ready := 0.0
	if meta.IsStatusConditionTrue(status.Conditions, teardownv1alpha1.ReadyCondition) {
		ready = 1
	}
	policyReady.With(l).Set(ready)
	policyGuarded.With(l).Set(float64(status.Guarded))
	policyTerminating.With(l).Set(float64(status.Terminating))
	policyBlocked.With(l).Set(float64(status.Blocked))
	policyRefused.With(l).Set(float64(status.Refused))
}

// forgetPolicy deletes a policy's series once it is gone.
func forgetPolicy(obj client.Object) {
	l := policyMetricLabels(obj)
	for _, g := range []*prometheus.GaugeVec{policyReady, policyGuarded, policyTerminating, policyBlocked, policyRefused} {
		g.Delete(l)
	}
}
