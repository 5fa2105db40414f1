/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command teardown-controller runs TeardownPolicy and ClusterTeardownPolicy:
// ordered cleanup steps before any kind of object is deleted.
// `teardown-controller uninstall` deletes every policy and waits until they
// released what they guard (internal/uninstall); `teardown-controller check`
// says whether the install works (internal/installcheck); --version prints
// the build.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/teardown-dev/teardown/internal/admit"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/installcheck"
	"github.com/teardown-dev/teardown/internal/recordseal"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/uninstall"
	"github.com/teardown-dev/teardown/internal/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "uninstall" {
		os.Exit(uninstall.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(installcheck.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	opts := controller.ManagerOptions{Controller: controller.DefaultOptions()}
	var webhookOpts webhook.Options
	flag.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8443", "Address of the Prometheus metrics endpoint; 0 disables it.")
	metricsSecure := flag.Bool("metrics-secure", true, "Serve the metrics over HTTPS, only to clients the API server authenticates and authorizes for get on /metrics (the metrics-reader ClusterRole); false serves plain HTTP to anyone.")
	flag.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "Folder with the metrics endpoint's tls.crt and tls.key (default: a self-signed certificate made at start).")
	flag.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.BoolVar(&opts.LeaderElection, "leader-elect", false, "Elect a leader, so that only one of several replicas acts.")
	flag.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's own namespace; required outside a cluster).")
	flag.IntVar(&opts.Controller.TargetWorkers, "target-workers", opts.Controller.TargetWorkers, "Target objects cleaned up at once; attaching gets four times as many workers.")
	flag.DurationVar(&opts.Controller.AttemptTimeout, "attempt-timeout", opts.Controller.AttemptTimeout, "Longest one run of a policy's steps for one object may take.")
	flag.IntVar(&opts.Controller.WebhookCallsPerTenant, "webhook-calls-per-tenant", opts.Controller.WebhookCallsPerTenant, "Webhook calls one namespace's TeardownPolicies (or one ClusterTeardownPolicy) have in flight at most; calls run off the cleanup workers, and more wait their turn.")
	flag.DurationVar(&opts.Controller.StatusInterval, "status-interval", opts.Controller.StatusInterval, "How often policy status counts are refreshed.")
	flag.BoolVar(&opts.Controller.EventDrivenWaits, "event-driven-waits", opts.Controller.EventDrivenWaits, "Wake a pending wait or delete step as soon as an object it waits on changes or goes (a metadata-only watch per kind the controller may list and watch), with a check every 30 s as a safety net; false checks every pending step every 2 s instead.")
	flag.DurationVar(&opts.Controller.DiagnoseAfter, "diagnose-after", opts.Controller.DiagnoseAfter, "How long a guarded object terminates before the controller diagnoses what its pending step waits on and reports the root cause (status.blockedObjects, a TerminationBlocked Event, teardown_blocked_objects); 0 turns the diagnosis off.")
	flag.DurationVar(&opts.Controller.DiagnoseInterval, "diagnose-interval", opts.Controller.DiagnoseInterval, "How often one object is diagnosed again at most.")
	diagnoseKinds := flag.String("diagnose-kinds", "", "Resources whose every terminating object is diagnosed too, guarded or not, such as namespaces,persistentvolumeclaims,deployments.apps (a TerminationBlocked Event and teardown_blocked_objects with policy=\"\"); the controller needs list on them: config/rbac/diagnose_role.yaml.")
	flag.StringVar(&opts.Controller.DefaultServiceAccount, "default-service-account", opts.Controller.DefaultServiceAccount, "ServiceAccount of its own namespace that a TeardownPolicy without spec.serviceAccountName acts as; empty requires every TeardownPolicy to name one.")
	var allowedCIDRs steps.CIDRs
	flag.Var(&allowedCIDRs, steps.AllowedCIDRsFlag, "Destinations webhook steps may call although they are loopback, link-local, cloud metadata or unspecified addresses, as CIDR prefixes (repeated or comma-separated), such as 127.0.0.0/8 for a local test server.")
	flag.BoolVar(&opts.Controller.WebhookAllowHTTP, steps.AllowHTTPFlag, false, "Let webhook steps call plain http:// URLs; by default only https:// is called.")
	webhookProxy := flag.String(steps.WebhookProxyFlag, "", "HTTP proxy (http:// or https:// URL) of webhook calls to IP addresses and to outside names written absolute (https://hooks.example.com./); names in the cluster are called directly. The proxy's address is guarded like a destination (--"+steps.AllowedCIDRsFlag+"). HTTPS_PROXY and HTTP_PROXY are never used.")
	flag.StringVar(&opts.Controller.ClusterResourceNamespace, "cluster-resource-namespace", podNamespace(), "Namespace of the signing Secrets of ClusterTeardownPolicies' webhook steps (default: the POD_NAMESPACE variable, else the pod's own namespace).")
	flag.StringVar(&opts.RecordKeysSecret, "record-keys-secret", recordseal.DefaultSecret, "Secret of --cluster-resource-namespace holding the keys that seal the records the controller writes on guarded objects, so that it tells its own from forgeries without any admission policy (docs/security.md); made with one key when missing. Empty, or no namespace, seals nothing.")
	flag.StringVar(&opts.Controller.ClusterDomain, steps.ClusterDomainFlag, steps.DefaultClusterDomain, "The cluster's DNS domain (the kubelet's --cluster-domain), by which a TeardownPolicy's webhook URL hosts are read: <service>.<namespace>.svc.<domain> and the other forms must name its own namespace.")
	flag.StringVar(&opts.Controller.WebhookConfiguration, "attach-webhook-configuration", "", "Name of the MutatingWebhookConfiguration of the attach-at-create webhook; empty turns the webhook off.")
	flag.BoolVar(&opts.Controller.InUseWebhook, "inuse-webhook", false, "Serve the in-use webhook ("+admit.InUsePath+"), which refuses a pod that would start using a Secret, ConfigMap or ServiceAccount an unused step holds while it is being deleted, and keep its configuration (--inuse-webhook-configuration) asking only about the pods of namespaces where such an object is held; unused steps then confirm no sooner than --unused-release-grace after the deletion and after the configuration covered the namespace. Without it, a pod created while such an object is being deleted can lose it.")
	flag.StringVar(&opts.Controller.InUseWebhookConfiguration, "inuse-webhook-configuration", opts.Controller.InUseWebhookConfiguration, "With --inuse-webhook: the ValidatingWebhookConfiguration holding webhook "+admit.InUseWebhookName+", whose matchConditions entry "+admit.HeldNamespacesCondition+" the controller keeps on the namespaces where unused steps hold objects.")
	inUseFailure := flag.String("inuse-webhook-failure-policy", "Ignore", "What the in-use webhook answers when it cannot make its check: Ignore admits the pod with a warning, Fail refuses it; keep it the failurePolicy of its ValidatingWebhookConfiguration.")
	flag.DurationVar(&opts.Controller.UnusedGrace, "unused-release-grace", opts.Controller.UnusedGrace, "With --inuse-webhook: how long after its deletion an unused step's target is confirmed unused at the earliest; it must exceed how long the API server takes from the in-use webhook's answer to storing the pod (the slowest other validating webhook on pods), and from a change of the webhook's configuration to using it.")
	flag.IntVar(&webhookOpts.Port, "webhook-port", 9443, "Port of the admission webhooks, with --attach-webhook-configuration or --inuse-webhook.")
	flag.StringVar(&webhookOpts.CertDir, "webhook-cert-dir", "", "Folder with the webhook's tls.crt and tls.key (default: the system temp folder's k8s-webhook-server/serving-certs).")
	gcPercent := flag.Int(controller.GCPercentFlag, controller.DefaultGCPercent, "The garbage collector's GOGC: collect when the heap has grown by this percentage of the live heap. Lower keeps memory nearer the live heap (mostly the cache of guarded objects) for more CPU; the GOGC variable, when set, wins.")
	showVersion := flag.Bool("version", false, "Print the version, commit and build date, and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Usage = usage
	flag.Parse()
	if *showVersion || flag.NArg() == 1 && flag.Arg(0) == "version" {
		fmt.Println(version.Get().String())
		return
	}
	if err := noStrayArguments(flag.Args()); err != nil {
		// A typo (teardown-controller unistall) must not start a second
		// controller, with whatever credentials the shell has.
		fmt.Fprintln(os.Stderr, "teardown-controller:", err)
		os.Exit(2)
	}
	controller.SetGCPercent(*gcPercent)
	opts.Controller.WebhookAllowedCIDRs = allowedCIDRs
	proxy, err := steps.ParseWebhookProxy(*webhookProxy, allowedCIDRs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardown-controller:", err)
		os.Exit(2)
	}
	opts.Controller.WebhookProxy = proxy
	if err := steps.ValidateClusterDomain(opts.Controller.ClusterDomain); err != nil {
		fmt.Fprintln(os.Stderr, "teardown-controller:", err)
		os.Exit(2)
	}
	kinds, err := diagnosis.ParseDiagnoseKinds(*diagnoseKinds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardown-controller:", err)
		os.Exit(2)
	}
	opts.Controller.DiagnoseKinds = kinds
	switch *inUseFailure {
	case "Ignore":
	case "Fail":
		opts.Controller.InUseFailClosed = true
	default:
		fmt.Fprintln(os.Stderr, "teardown-controller: --inuse-webhook-failure-policy must be Ignore or Fail, not", *inUseFailure)
		os.Exit(2)
	}
	ctrl.SetLogger(controller.LazyValues(zap.New(zap.UseFlagOptions(&zapOpts))))
	opts.WebhookServer = webhook.NewServer(webhookOpts)
	opts.MetricsInsecure = !*metricsSecure
	v := version.Get()
	ctrl.Log.WithName("setup").Info("Starting teardown-controller", "version", v.Version, "commit", v.Commit, "date", v.Date, "goVersion", v.GoVersion, "platform", v.Platform)

	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "teardown-controller:", err)
		os.Exit(1)
	}
}

// noStrayArguments refuses anything left after the flags: the controller
// takes none, and its commands (uninstall, version) come first.
func noStrayArguments(args []string) error {
	if len(args) == 0 {
		return nil
	}
	return fmt.Errorf("unknown command or argument %q: the commands are uninstall, check and version; without one it runs the controller, which takes only flags (--help)", args[0])
}

// usage lists the commands before the flags.
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, `Usage:
  teardown-controller [flags]            run the controller
  teardown-controller uninstall [flags]  delete every policy and wait until they released what they guard
  teardown-controller check [flags]      say whether Teardown is installed and working (the chart's helm test)
  teardown-controller version            print the version, commit and build date

Flags:
`)
	flag.PrintDefaults()
}

// podNamespace is the namespace the controller runs in: the POD_NAMESPACE
// variable, else the namespace of the pod's ServiceAccount token; "" outside
// a cluster.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

func run(opts controller.ManagerOptions) error {
	mgr, err := controller.NewManager(ctrl.GetConfigOrDie(), opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
