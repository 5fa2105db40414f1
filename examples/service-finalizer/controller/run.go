/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
)

// ControllerName names the controller in Events.
const ControllerName = "service-finalizer"

// RunWithConfig wires a Controller to the cluster of cfg (clients, Service
// informer, Event recorder) and runs it with workers workers until ctx is
// cancelled.
func RunWithConfig(ctx context.Context, cfg *rest.Config, registry Registry, opts Options, workers int) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the dynamic client: %w", err)
	}
	if opts.EventRecorder == nil {
		broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
		if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			return fmt.Errorf("starting the Event broadcaster: %w", err)
		}
		defer broadcaster.Shutdown()
		opts.EventRecorder = broadcaster.NewRecorder(scheme.Scheme, ControllerName)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(ctx, dyn, factory.Core().V1().Services(), registry, opts)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	return c.Run(ctx, workers)
}
