/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command kubebuilder-operator runs the bucket controller: every ConfigMap
// labelled example.com/bucket=true gets a bucket in an external bucket API,
// deleted before the ConfigMap goes. Without --bucket-api it serves a fake
// bucket API in this process, on 127.0.0.1 only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/teardown-dev/teardown/examples/kubebuilder-operator/bucketapi"
	"github.com/teardown-dev/teardown/examples/kubebuilder-operator/controller"
)

func main() {
	// --kubeconfig is registered by controller-runtime.
	var bucketAPI, metricsAddr string
	flag.StringVar(&bucketAPI, "bucket-api", "", "Base URL of the bucket API; empty serves a fake one in this process on 127.0.0.1.")
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint, for example :8080; 0 turns it off.")
	klog.InitFlags(nil)
	flag.Parse()
	ctrl.SetLogger(klog.NewKlogr())

	if err := run(ctrl.SetupSignalHandler(), bucketAPI, metricsAddr); err != nil {
		fmt.Fprintf(os.Stderr, "kubebuilder-operator: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bucketAPI, metricsAddr string) error {
	log := ctrl.Log.WithName("setup")
	if bucketAPI == "" {
		var err error
		if bucketAPI, err = bucketapi.NewServer().Start(ctx, "127.0.0.1:0"); err != nil {
			return err
		}
		log.Info("Serving a fake bucket API", "url", bucketAPI)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: metricsAddr}})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := (&controller.BucketReconciler{
		Client:  mgr.GetClient(),
		Buckets: bucketapi.NewClient(bucketAPI, nil),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the bucket controller: %w", err)
	}
	log.Info("Starting manager")
	return mgr.Start(ctx)
}
