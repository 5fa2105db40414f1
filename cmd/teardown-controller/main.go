/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command teardown-controller runs TeardownPolicy and ClusterTeardownPolicy:
// ordered cleanup steps before any kind of object is deleted.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/teardown-dev/teardown/internal/controller"
)

func main() {
	opts := controller.DefaultOptions()
	var metricsAddr, probeAddr string
	var leaderElect bool
	var leaderElectionNamespace string
	var webhookPort int
	var webhookCertDir string
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader, so that only one of several replicas acts.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's own namespace; required outside a cluster).")
	flag.IntVar(&opts.TargetWorkers, "target-workers", opts.TargetWorkers, "Target objects reconciled at once.")
	flag.DurationVar(&opts.AttemptTimeout, "attempt-timeout", opts.AttemptTimeout, "Longest one run of a policy's steps for one object may take.")
	flag.DurationVar(&opts.StatusInterval, "status-interval", opts.StatusInterval, "How often policy status counts are refreshed.")
	flag.StringVar(&opts.WebhookConfiguration, "attach-webhook-configuration", "", "Name of the MutatingWebhookConfiguration of the attach-at-create webhook; empty turns the webhook off.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port of the attach-at-create webhook, with --attach-webhook-configuration.")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", "", "Folder with the webhook's tls.crt and tls.key (default: the system temp folder's k8s-webhook-server/serving-certs).")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	if err := run(opts, metricsAddr, probeAddr, leaderElect, leaderElectionNamespace, webhook.Options{Port: webhookPort, CertDir: webhookCertDir}); err != nil {
		fmt.Fprintln(os.Stderr, "teardown-controller:", err)
		os.Exit(1)
	}
}

func run(opts controller.Options, metricsAddr, probeAddr string, leaderElect bool, leaderElectionNamespace string, webhookOpts webhook.Options) error {
	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controller.CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "teardown-controller.teardown.dev",
		LeaderElectionNamespace: leaderElectionNamespace,
		// main exits as soon as the manager stops, so handing the Lease over
		// at once is safe, and spares a rolling update the lease timeout.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(webhookOpts),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := controller.Setup(mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
