/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command teardown runs the teardown-controller for the benchmark: the same
// manager and controllers as cmd/teardown-controller (ctrl.GetConfigOrDie and
// controller.NewManager; no leader election, which a benchmark of one
// replica does not use, and the attach-at-create webhook only with
// -attach-webhook, webhook.go),
// plus net/http/pprof and the metrics registry on a
// loopback address so that the benchmark can profile it. Its own metrics and
// probe servers are off so that several runs never fight over a port.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/teardown-dev/teardown/bench/debugserver"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/steps"
)

func main() {
	// --kubeconfig is registered by controller-runtime.
	opts := controller.DefaultOptions()
	var debugAddress string
	var qps float64
	var burst int
	var attachWebhook string
	flag.IntVar(&opts.TargetWorkers, "target-workers", opts.TargetWorkers, "Target objects reconciled at once.")
	flag.BoolVar(&opts.EventDrivenWaits, "event-driven-waits", opts.EventDrivenWaits, "As cmd/teardown-controller: wake pending wait and delete steps from watches; false polls them every 2 s.")
	flag.DurationVar(&opts.DiagnoseAfter, "diagnose-after", opts.DiagnoseAfter, "As cmd/teardown-controller: how long a guarded object terminates before it is diagnosed; 0 is off.")
	flag.DurationVar(&opts.DiagnoseInterval, "diagnose-interval", opts.DiagnoseInterval, "As cmd/teardown-controller: how often one object is diagnosed again at most.")
	flag.DurationVar(&opts.StatusInterval, "status-interval", opts.StatusInterval, "How often policy status counts are refreshed.")
	var allowedCIDRs steps.CIDRs
	flag.Var(&allowedCIDRs, steps.AllowedCIDRsFlag, "As cmd/teardown-controller: destinations webhook steps may call although they are loopback, link-local, metadata or unspecified.")
	flag.BoolVar(&opts.WebhookAllowHTTP, steps.AllowHTTPFlag, false, "As cmd/teardown-controller: let webhook steps call plain http:// URLs.")
	flag.Float64Var(&qps, "kube-api-qps", 0, "Client QPS; 0 keeps what ctrl.GetConfigOrDie sets, as cmd/teardown-controller does.")
	flag.IntVar(&burst, "kube-api-burst", 0, "Client burst; 0 keeps what ctrl.GetConfigOrDie sets.")
	gcPercent := flag.Int(controller.GCPercentFlag, controller.DefaultGCPercent, "As cmd/teardown-controller: the garbage collector's GOGC; the GOGC variable, when set, wins.")
	flag.StringVar(&attachWebhook, "attach-webhook", "", "Serve the attach-at-create webhook on a loopback port and create this MutatingWebhookConfiguration for it; empty serves none.")
	flag.StringVar(&debugAddress, "debug-address", "127.0.0.1:0", "Loopback address of /debug/pprof and /metrics.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	controller.SetGCPercent(*gcPercent)
	opts.WebhookAllowedCIDRs = allowedCIDRs
	ctrl.SetLogger(controller.LazyValues(zap.New(zap.UseFlagOptions(&zapOpts))))
	if err := run(opts, qps, burst, debugAddress, attachWebhook); err != nil {
		fmt.Fprintln(os.Stderr, "teardown:", err)
		os.Exit(1)
	}
}

func run(opts controller.Options, qps float64, burst int, debugAddress, attachWebhook string) error {
	cfg, mopts := ctrl.GetConfigOrDie(), controller.ManagerOptions{QPS: float32(qps), Burst: burst, Controller: opts}
	if attachWebhook != "" {
		cleanup, err := withAttachWebhook(cfg, attachWebhook, &mopts)
		if err != nil {
			return err
		}
		defer cleanup()
	}
	mgr, err := controller.NewManager(cfg, mopts)
	if err != nil {
		return err
	}
	if err := debugserver.Start(debugAddress); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
