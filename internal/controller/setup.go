/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package controller wires the teardown-controller's reconcilers into a
// manager.
package controller

import (
	"fmt"
	"net/netip"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/admit"
	"github.com/teardown-dev/teardown/internal/controller/cachetransform"
	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/controller/teardownpolicy"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/lease"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/recordseal"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/waits"
)

// Name is the controller's name in Events, leases and logs.
const Name = "teardown-controller"

// Options tune the controller.
type Options struct {
	// TargetWorkers is how many target objects are reconciled at once.
	TargetWorkers int
	// AttemptTimeout bounds one run of a policy's steps for one object,
	// and one webhook call.
	AttemptTimeout time.Duration
	// WebhookCallsPerTenant bounds the webhook calls in flight of one
	// namespace's TeardownPolicies (or one ClusterTeardownPolicy); calls
	// run off the cleanup workers (--webhook-calls-per-tenant).
	WebhookCallsPerTenant int
	// StatusInterval is how often policy status counts are refreshed.
	StatusInterval time.Duration
	// DefaultServiceAccount is the ServiceAccount of its namespace a
	// TeardownPolicy without spec.serviceAccountName acts as; empty makes
	// spec.serviceAccountName required.
	DefaultServiceAccount string
	// WebhookAllowHTTP lets webhook steps call plain http:// URLs
	// (--webhook-allow-http); by default only https:// is called.
	WebhookAllowHTTP bool
	// WebhookAllowedCIDRs are destinations webhook steps may call although
	// they are loopback, link-local, cloud metadata or unspecified
	// addresses (--webhook-allowed-cidrs), such as 127.0.0.0/8 for a test
	// server on the controller's host.
	WebhookAllowedCIDRs []netip.Prefix
	// ClusterResourceNamespace is where the signing Secrets of
	// ClusterTeardownPolicies' webhook steps are read
	// (--cluster-resource-namespace): the controller's own namespace.
	ClusterResourceNamespace string
	// ClusterDomain is the cluster's DNS domain (--cluster-domain), by
	// which a TeardownPolicy's webhook hosts are read; empty is
	// cluster.local.
	ClusterDomain string
	// WebhookProxy is the HTTP proxy of webhook calls to addresses and
	// outside names (--webhook-proxy, steps.ParseWebhookProxy); nil calls
	// everything directly.
	WebhookProxy *url.URL
	// WebhookConfiguration, when set, serves the attach-at-create webhook
	// on the manager's webhook server and keeps the rules of this
	// MutatingWebhookConfiguration on the kinds Automatic policies target.
	WebhookConfiguration string
	// InUseWebhook serves the in-use webhook (internal/admit.InUse) on
	// the manager's webhook server, keeps its configuration
	// InUseWebhookConfiguration narrowed to the namespaces where unused
	// steps hold objects (internal/admit.Coverage), and makes unused steps
	// confirm no sooner than UnusedGrace after their target's deletion and
	// its namespace's coverage.
	InUseWebhook bool
	// InUseWebhookConfiguration names the ValidatingWebhookConfiguration
	// of the in-use webhook (--inuse-webhook-configuration).
	InUseWebhookConfiguration string
	// InUseFailClosed refuses a pod whose check could not be made, as the
	// configuration's failurePolicy Fail does (--inuse-webhook-failure-policy).
	InUseFailClosed bool
	// UnusedGrace bounds the admission-to-storage latency of a pod the
	// in-use webhook admitted (--unused-release-grace).
	UnusedGrace time.Duration
	// EventDrivenWaits wakes a pending wait or delete step as soon as an
	// object it depends on changes or goes (internal/waits), with a slow
	// safety-net check; false polls every pending step every 2 s
	// (--event-driven-waits).
	EventDrivenWaits bool
	// DiagnoseAfter is how long a guarded object terminates before the
	// controller diagnoses what holds it (status.blockedObjects' diagnosis,
	// a TerminationBlocked Event, teardown_blocked_objects); 0 turns the
	// diagnosis off (--diagnose-after).
	DiagnoseAfter time.Duration
	// DiagnoseInterval is how often one object is diagnosed again at most
	// (--diagnose-interval).
	DiagnoseInterval time.Duration
	// DiagnoseKinds are resources whose every terminating object is
	// diagnosed too, guarded or not (--diagnose-kinds); the controller
	// needs list on them (config/rbac/diagnose_role.yaml).
	DiagnoseKinds []schema.GroupResource
	// Lease is the leader-election write gate NewManager installs with
	// leader election (internal/lease): the cleanups' step records carry
	// its epoch and no step runs while it refuses writes. nil fences
	// nothing.
	Lease *lease.Gate
	// RecordKeys seal the step records the controller writes and prove
	// the ones it reads (internal/recordseal, --record-keys-secret); nil
	// seals nothing, and every record bound to its object is read as the
	// controller's.
	RecordKeys *recordseal.Keyring
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		TargetWorkers: 16, AttemptTimeout: 2 * time.Minute, WebhookCallsPerTenant: steps.DefaultWebhookCallsPerTenant, StatusInterval: 15 * time.Second, DefaultServiceAccount: "default",
		EventDrivenWaits: true, DiagnoseAfter: 5 * time.Minute, DiagnoseInterval: 5 * time.Minute,
		UnusedGrace: 5 * time.Second, InUseWebhookConfiguration: admit.InUseConfiguration,
	}
}

// NewScheme returns the types the controller reads: Kubernetes' own and the
// policies.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := teardownv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// CacheOptions are the manager's cache options the controller is meant to
// run with: managedFields are dropped from every cached object, and guarded
// objects' metadata shares what it repeats (cachetransform), attached
// records included when keys prove them.
func CacheOptions(keys *recordseal.Keyring) cache.Options {
	return cache.Options{DefaultTransform: cachetransform.New(steps.Records{Keys: keys}.AttachedProven)}
}

// Only the in-use webhook's own configuration (config/webhook/inuse; rename
// both with --inuse-webhook-configuration), whose namespaces the controller
// keeps.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;update,resourceNames=teardown-refuse-new-uses

// Setup adds the policy and target controllers to mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	recorder := mgr.GetEventRecorder(Name)
	index := policy.NewIndex()
	records := steps.Records{Keys: opts.RecordKeys}
	starters := &steps.Starters{Records: records, Cache: mgr.GetClient(), Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Lease: opts.Lease}
	targets := &guarded.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Index: index, Records: starters,
		StartedByEarlierRelease: steps.StartedByEarlierRelease}
	if err := targets.SetupWithManager(mgr, opts.TargetWorkers); err != nil {
		return err
	}
	runner, err := steps.NewRunner(mgr, steps.RunnerOptions{
		Webhooks: steps.WebhookOptions{
			AllowHTTP: opts.WebhookAllowHTTP, AllowedCIDRs: opts.WebhookAllowedCIDRs,
			ClusterResourceNamespace: opts.ClusterResourceNamespace, ClusterDomain: opts.ClusterDomain,
			Proxy: opts.WebhookProxy,
		},
		DefaultServiceAccount: opts.DefaultServiceAccount,
		UnusedGrace:           unusedGrace(opts),
		WebhookCallsPerTenant: opts.WebhookCallsPerTenant,
		MaxWebhookCall:        opts.AttemptTimeout,
	}, targets.Wake)
	if err != nil {
		return err
	}
	runner.Lease = opts.Lease
	runner.Records = records
	runner.Starters = starters
	if opts.InUseWebhook {
		direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
		if err != nil {
			return fmt.Errorf("creating a direct client: %w", err)
		}
		coverage := admit.NewCoverage(direct, mgr.GetClient(), index, opts.InUseWebhookConfiguration, targets.Wake)
		if err := mgr.Add(coverage); err != nil {
			return fmt.Errorf("adding the in-use webhook's coverage: %w", err)
		}
		runner.Coverage = coverage
	}
	if opts.EventDrivenWaits {
		registry := waits.New(waits.Options{Cache: mgr.GetCache(), Client: mgr.GetClient(), Mapper: mgr.GetRESTMapper(), Wake: targets.Wake})
		if err := mgr.Add(registry); err != nil {
			return fmt.Errorf("adding the wait registry: %w", err)
		}
		runner.Waits = registry
	}
	policies := &teardownpolicy.Reconciler{
		Manager: mgr, Index: index, Targets: targets, Runner: runner, Recorder: recorder,
		AttemptTimeout: opts.AttemptTimeout, StatusInterval: opts.StatusInterval,
		WebhookConfiguration: opts.WebhookConfiguration,
	}
	if opts.DiagnoseAfter > 0 {
		runner.Waiting = steps.NewWaiting()
		diagnoser := &diagnosis.Diagnoser{
			After: opts.DiagnoseAfter, Every: opts.DiagnoseInterval, Tick: diagnoseTick(opts), Kinds: opts.DiagnoseKinds,
			Config: mgr.GetConfig(), Mapper: mgr.GetRESTMapper(), Cache: mgr.GetCache(), Policies: mgr.GetClient(), Index: index,
			Waiting: runner.Waiting, Recorder: recorder,
		}
		policies.Diagnoses = diagnoser
		if err := mgr.Add(diagnoser); err != nil {
			return fmt.Errorf("adding the diagnosis: %w", err)
		}
	}
	if opts.WebhookConfiguration != "" {
		mgr.GetWebhookServer().Register(admit.Path, &admission.Webhook{Handler: &admit.Attacher{Client: mgr.GetClient()}})
	}
	if opts.InUseWebhook {
		mgr.GetWebhookServer().Register(admit.InUsePath, &admission.Webhook{Handler: &admit.InUse{
			Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), FailClosed: opts.InUseFailClosed,
		}})
	}
	if opts.WebhookConfiguration != "" || opts.InUseWebhook {
		// Ready only once the webhook server answers TLS: the Service's
		// endpoints, and so the API server's calls, wait for it
		// (kubectl teardown check reads those endpoints).
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("adding the webhook readiness check: %w", err)
		}
	}
	targets.PolicyExists = policies.PolicyExists
	if err := policies.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the policy controllers: %w", err)
	}
	return nil
}

// unusedGrace is the unused steps' grace: it covers the time the other
// validating webhooks on pods take to admit a pod the in-use webhook
// already let through, so it applies only when that webhook runs.
func unusedGrace(opts Options) time.Duration {
	if !opts.InUseWebhook {
		return 0
	}
	return opts.UnusedGrace
}

// diagnoseTick is how often the diagnosis looks for objects due: often
// enough to honour --diagnose-after and --diagnose-interval within half of
// the shorter, between 1 s and 30 s (a pass that finds nothing due reads
// only the cache).
func diagnoseTick(opts Options) time.Duration {
	every := opts.DiagnoseAfter
	if opts.DiagnoseInterval > 0 {
		every = min(every, opts.DiagnoseInterval)
	}
	return min(max(every/2, time.Second), 30*time.Second)
}
