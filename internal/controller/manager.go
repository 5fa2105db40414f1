/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/teardown-dev/teardown/internal/lease"
	"github.com/teardown-dev/teardown/internal/recordseal"
)

// LeaderElectionID names the Lease that replicas of the teardown-controller
// elect their leader with.
const LeaderElectionID = "teardown-controller.teardown.dev"

// The leader election's timing (controller-runtime's defaults): a standby
// takes the Lease over leaseDuration after it last saw it renewed; the
// leader gives it up, and its lease.Gate refuses writes, renewDeadline
// after its last renewal.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// noRecorders records no Events about the Lease (controller-runtime's
// lock wants a recorder provider before the manager that has one exists).
type noRecorders struct{}

func (noRecorders) GetEventRecorderFor(string) record.EventRecorder { return nil }

func (noRecorders) GetEventRecorder(string) events.EventRecorder { return nil }

// ManagerOptions are what callers of NewManager may choose. Everything else
// (the scheme, the cache options that strip managedFields, the leader
// election Lease, the health checks and the controllers) is decided once, in
// NewManager. The zero value serves no endpoint and elects no leader, which
// is what tests and embedded controllers want.
type ManagerOptions struct {
	// MetricsAddr is the address of the Prometheus metrics endpoint; empty
	// or "0" turns it off.
	MetricsAddr string
	// MetricsInsecure serves the metrics over plain HTTP to anyone who can
	// reach the port. By default (false) they are served over HTTPS, and
	// only to clients the API server authenticates (TokenReview) and
	// authorizes for get on the non-resource URL /metrics
	// (SubjectAccessReview): the metrics-reader ClusterRole of config/rbac.
	MetricsInsecure bool
	// MetricsCertDir holds the metrics endpoint's tls.crt and tls.key; when
	// empty or without them, a self-signed certificate is made at start.
	MetricsCertDir string
	// ProbeAddr is the address of the /healthz and /readyz endpoints; empty
	// or "0" turns them off.
	ProbeAddr string
	// LeaderElection makes replicas elect a leader, so that only one acts.
	LeaderElection bool
	// LeaderElectionNamespace is the namespace of the leader-election
	// Lease; empty means the pod's own namespace.
	LeaderElectionNamespace string
	// WebhookServer serves the attach-at-create webhook when
	// Controller.WebhookConfiguration is set; nil means controller-runtime's
	// default server.
	WebhookServer ctrlwebhook.Server
	// QPS and Burst, when positive, replace the rest.Config's client rate
	// limits.
	QPS   float32
	Burst int
	// Logger is the manager's logger; the zero value means ctrl.Log.
	Logger klog.Logger
	// RecordKeysSecret names the Secret of Controller.ClusterResourceNamespace
	// holding the keys that seal the controller's records (recordseal.Load,
	// which makes it when missing); empty, or no namespace, seals nothing
	// unless Controller.RecordKeys is set.
	RecordKeysSecret string
	// Controller tunes the controllers; start from DefaultOptions.
	Controller Options
}

// NewManager returns a manager for cfg's cluster with the teardown-controller
// set up in it. It is the one place that builds the teardown-controller's
// manager: cmd/teardown-controller, the demo, the benchmark and the tests
// all call it, so that they run the same controller.
func NewManager(cfg *rest.Config, opts ManagerOptions) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	if opts.QPS > 0 || opts.Burst > 0 {
		cfg = rest.CopyConfig(cfg)
		if opts.QPS > 0 {
			cfg.QPS = opts.QPS
		}
		if opts.Burst > 0 {
			cfg.Burst = opts.Burst
		}
	}
	// Before the gate fences cfg: a standby makes the keys' Secret, or
	// reads it, at its start, before it may lead.
	if opts.Controller.RecordKeys == nil && opts.RecordKeysSecret != "" && opts.Controller.ClusterResourceNamespace != "" {
		keys, err := loadRecordKeys(cfg, scheme, opts.Controller.ClusterResourceNamespace, opts.RecordKeysSecret)
		if err != nil {
			return nil, err
		}
		opts.Controller.RecordKeys = keys
	}
	var gate *lease.Gate
	var lock resourcelock.Interface
	if opts.LeaderElection {
		// The Lease is written through cfg as given; everything else the
		// controller writes goes through the gate (internal/lease).
		gate = lease.NewGate(renewDeadline)
		l, err := leaderelection.NewResourceLock(cfg, noRecorders{}, leaderelection.Options{
			LeaderElection: true, LeaderElectionID: LeaderElectionID,
			LeaderElectionNamespace: opts.LeaderElectionNamespace, RenewDeadline: renewDeadline,
		})
		if err != nil {
			return nil, fmt.Errorf("creating the leader-election lock: %w", err)
		}
		lock = gate.Lock(l, nil)
		cfg = gate.Fence(cfg)
		opts.Controller.Lease = gate
	}
	metricsAddr := opts.MetricsAddr
	if metricsAddr == "" {
		// controller-runtime would serve on :8080.
		metricsAddr = "0"
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   CacheOptions(opts.Controller.RecordKeys),
		MapperProvider:          newRESTMapper,
		Logger:                  opts.Logger,
		Metrics:                 metricsOptions(metricsAddr, opts),
		HealthProbeBindAddress:  opts.ProbeAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// Every caller stops using the manager once it stops, so handing
		// the Lease over at once is safe, and spares a rolling update the
		// lease timeout.
		LeaderElectionReleaseOnCancel:       true,
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       ptr.To(leaseDuration),
		RenewDeadline:                       ptr.To(renewDeadline),
		RetryPeriod:                         ptr.To(retryPeriod),
		WebhookServer:                       opts.WebhookServer,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	log := mgr.GetLogger().WithName("setup")
	if opts.Controller.RecordKeys == nil {
		log.Info("Records are not sealed: only the admission policy teardown-protect-records keeps them the controller's (set --cluster-resource-namespace and --record-keys-secret)")
	} else {
		log.Info("Records are sealed", "key", opts.Controller.RecordKeys.Sealing(), "since", opts.Controller.RecordKeys.Since())
	}
	if err := Setup(mgr, opts.Controller); err != nil {
		return nil, err
	}
	return mgr, nil
}

// loadRecordKeys reads (or makes) the keys that seal records, before the
// manager's cache exists: its transform needs them.
func loadRecordKeys(cfg *rest.Config, scheme *runtime.Scheme, namespace, secret string) (*recordseal.Keyring, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for the record keys: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return recordseal.Load(ctx, c, c, namespace, secret, time.Now)
}

// The metrics endpoint's authentication and authorization ask the API
// server: a TokenReview for the scraper's bearer token, a SubjectAccessReview
// for get on /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves the metrics on addr: over HTTPS behind the API
// server's authentication and authorization, unless opts.MetricsInsecure.
func metricsOptions(addr string, opts ManagerOptions) metricsserver.Options {
	if opts.MetricsInsecure || addr == "0" {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{
		BindAddress:    addr,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		CertDir:        opts.MetricsCertDir,
		// HTTP/1.1 only, as kubebuilder scaffolds: HTTP/2 stream
		// cancellation made servers exhaustible (CVE-2023-44487,
		// CVE-2023-39325).
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
}
