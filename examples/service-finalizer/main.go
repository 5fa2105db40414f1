/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command service-finalizer runs the example controller that deregisters a
// Service's DNS record before a Service declaring my.custom/finalizer goes.
// The DNS provider is an in-memory fake: see controller.FakeDNS.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/teardown-dev/teardown/examples/service-finalizer/controller"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "Path of a kubeconfig; in-cluster configuration if empty.")
	workers := flag.Int("workers", 2, "Services processed in parallel.")
	propagation := flag.Duration("dns-propagation", 3*time.Second, "How long the fake DNS provider takes to remove a record.")
	recheck := flag.Duration("recheck-after", controller.DefaultRecheckAfter, "How long to wait before checking a pending deregistration again.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())

	if err := run(ctx, *kubeconfig, *workers, *propagation, *recheck); err != nil {
		fmt.Fprintf(os.Stderr, "service-finalizer: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string, workers int, propagation, recheck time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	dns := controller.NewFakeDNS(propagation)
	return controller.RunWithConfig(ctx, cfg, dns, controller.Options{RecheckAfter: recheck}, workers)
}
