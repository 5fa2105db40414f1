/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package demo

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/teardown-dev/teardown/internal/controller"
)

// StatusInterval is how often the demo's controller refreshes policy
// status, so that the counts a person watches follow within a second (the
// controller's default is 15s).
const StatusInterval = time.Second

// StartController runs the teardown-controller, as cmd/teardown-controller
// does but without metrics and probe endpoints, against cfg until ctx ends.
// The control plane must serve the teardown.dev CRDs. The returned function
// waits for the controller to stop after ctx ended and returns its error.
func StartController(ctx context.Context, cfg *rest.Config, log klog.Logger) (wait func() error, err error) {
	opts := controller.ManagerOptions{QPS: 100, Burst: 200, Logger: log, Controller: controller.DefaultOptions()}
	opts.Controller.StatusInterval = StatusInterval
	mgr, err := controller.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("setting up the teardown-controller: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error { return <-done }, nil
}
