/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestAttachWorkers: the running manager attaches with four times
// --target-workers workers (guarded.AttachWorkersPerWorker), and cleans up
// with --target-workers (controller-runtime's max_concurrent_reconciles of
// each target controller, set when it starts). Attaching is one PATCH per
// object: with as few workers as cleanup gets, a burst of creates outran
// it and queued for the whole burst (docs/performance.md, Scale).
func TestAttachWorkers(t *testing.T) {
	testenv.SkipShort(t) // reads the suite's running manager
	workers := controller.DefaultOptions().TargetWorkers
	want := map[string]float64{"target-attach": float64(4 * workers), "target-finalize": float64(workers)}
	var got map[string]float64
	testenv.Eventually(t, 30*time.Second, "both target controllers started", func(context.Context) (bool, error) {
		var err error
		got, err = maxConcurrentReconciles(want)
		return len(got) == len(want), err
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("max_concurrent_reconciles (-want +got):\n%s", diff)
	}
}

// maxConcurrentReconciles reads controller_runtime_max_concurrent_reconciles
// of the controllers named in names from the registry the manager serves.
func maxConcurrentReconciles(names map[string]float64) (map[string]float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return nil, err
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_max_concurrent_reconciles" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if _, ok := names[l.GetValue()]; l.GetName() == "controller" && ok {
					got[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return got, nil
}
