/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command baseline runs the kubebuilder-book finalizer controller of package
// bench/baseline, as a kubebuilder-generated main.go runs it
// (ctrl.GetConfigOrDie, no leader election), for the benchmark. Flags raise
// its workers and client rate limits for the "tuned" variant.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/teardown-dev/teardown/bench/baseline"
	"github.com/teardown-dev/teardown/bench/debugserver"
)

func main() {
	// --kubeconfig is registered by controller-runtime.
	var (
		workers      int
		qps          float64
		burst        int
		finalizer    string
		selector     string
		debugAddress string
		cleanupDelay time.Duration
	)
	flag.IntVar(&workers, "workers", 0, "MaxConcurrentReconciles; 0 keeps controller-runtime's default (1), as kubebuilder generates it.")
	flag.Float64Var(&qps, "kube-api-qps", 0, "Client QPS; 0 keeps what ctrl.GetConfigOrDie sets.")
	flag.IntVar(&burst, "kube-api-burst", 0, "Client burst; 0 keeps what ctrl.GetConfigOrDie sets.")
	flag.StringVar(&finalizer, "finalizer", "bench.teardown.dev/baseline", "Finalizer the controller owns.")
	flag.StringVar(&selector, "selector", "app=bench", "Label selector of the ConfigMaps it guards.")
	flag.StringVar(&debugAddress, "debug-address", "127.0.0.1:0", "Loopback address of /debug/pprof and /metrics.")
	flag.DurationVar(&cleanupDelay, "cleanup-delay", 0, "Time the external cleanup takes; 0 does nothing.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(workers, qps, burst, finalizer, selector, debugAddress, cleanupDelay); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run(workers int, qps float64, burst int, finalizer, selector, debugAddress string, cleanupDelay time.Duration) error {
	sel, err := labels.Parse(selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	if qps > 0 {
		cfg.QPS = float32(qps)
	}
	if burst > 0 {
		cfg.Burst = burst
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	r := &baseline.ConfigMapReconciler{Client: mgr.GetClient(), FinalizerName: finalizer, Selector: sel, Workers: workers}
	if cleanupDelay > 0 {
		r.Cleanup = func(ctx context.Context, _ *corev1.ConfigMap) error {
			select {
			case <-time.After(cleanupDelay):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the controller: %w", err)
	}
	if err := debugserver.Start(debugAddress); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
