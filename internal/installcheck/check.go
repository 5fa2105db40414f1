/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package installcheck says whether Teardown is installed and working in a
// cluster, as `flux check` and cert-manager's API check do: the CRDs served,
// the admission policies bound, a controller leading and recent, the
// admission webhooks backed by a ready endpoint, the versions in agreement.
// `kubectl teardown check` and `teardown-controller check` (the chart's
// helm test and optional post-install hook) both run it.
package installcheck

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// The names the chart and config/default install under. They are fixed (one
// release per cluster; charts/teardown/templates/_helpers.tpl says why).
// LeaseName and InUseWebhookConfig spell controller.LeaderElectionID and
// admit.InUseConfiguration, which this package may not import (a layer
// above it): TestCheckNamesTheControllersObjects holds them together.
const (
	DefaultNamespace     = "teardown-system"
	LeaseName            = "teardown-controller.teardown.dev"
	DeploymentName       = "teardown-controller"
	AttachWebhookConfig  = "teardown-attach-finalizers"
	InUseWebhookConfig   = "teardown-refuse-new-uses"
	versionLabel         = "app.kubernetes.io/version"
	serviceNameLabel     = discoveryv1.LabelServiceName
	leaseRenewalSlack    = 5 * time.Second
	defaultLeaseDuration = 15 * time.Second
)

// CRDs are the resources the controller serves, by CRD name.
var CRDs = []string{"teardownpolicies.teardown.dev", "clusterteardownpolicies.teardown.dev"}

// AdmissionPolicies are the ValidatingAdmissionPolicies of docs/admission.md;
// each is bound by a binding of the same name.
var AdmissionPolicies = []string{
	"teardown-protect-finalizers",
	"teardown-protect-records",
	"teardown-policy-service-account",
	"teardown-freeze-deleted-policies",
}

// Result is one check's outcome.
type Result struct {
	Name string
	// Failed is a broken install; Warning is worth knowing and breaks nothing.
	Failed, Warning bool
	Detail          string
}

// Options tune Run.
type Options struct {
	// Namespace is the controller's (DefaultNamespace if empty).
	Namespace string
	// ClientVersion is the version of the binary running the check, compared
	// with the installed one.
	ClientVersion string
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// Clients are what the checks read.
type Clients struct {
	Kube          kubernetes.Interface
	APIExtensions apiextensionsclient.Interface
}

// NewClients builds Clients for cfg.
func NewClients(cfg *rest.Config) (Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("connecting to the API server: %w", err)
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("connecting to the API server: %w", err)
	}
	return Clients{Kube: kube, APIExtensions: ext}, nil
}

// Run makes every check once and returns their results in a fixed order.
func Run(ctx context.Context, c Clients, opts Options) []Result {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	crdVersion, crds := checkCRDs(ctx, c)
	results := []Result{crds, checkAdmissionPolicies(ctx, c)}
	controllerVersion, controller := checkController(ctx, c, opts)
	results = append(results, controller)
	results = append(results, checkWebhook(ctx, c, opts.Namespace, "attach webhook", AttachWebhookConfig, true))
	results = append(results, checkWebhook(ctx, c, opts.Namespace, "in-use webhook", InUseWebhookConfig, false))
	return append(results, checkVersions(crdVersion, controllerVersion, opts.ClientVersion))
}

// Failed reports whether any result failed.
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Failed {
			return true
		}
	}
	return false
}

// Print writes one line per result: a mark, the check's name, its detail.
func Print(w io.Writer, results []Result) {
	for _, r := range results {
		mark := "ok  "
		switch {
		case r.Failed:
			mark = "FAIL"
		case r.Warning:
			mark = "warn"
		}
		fmt.Fprintf(w, "%s  %-18s %s\n", mark, r.Name, r.Detail)
	}
}

// checkCRDs: both CRDs established, their names accepted, and the group
// version served by discovery. It returns the CRDs' version label.
func checkCRDs(ctx context.Context, c Clients) (string, Result) {
	r := Result{Name: "CRDs"}
	version := ""
	for _, name := range CRDs {
		crd, err := c.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", fail(r, "reading CustomResourceDefinition %s: %s", name, reason(err))
		}
		for _, cond := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.Established, apiextensionsv1.NamesAccepted} {
			if !crdCondition(crd, cond) {
				return "", fail(r, "CustomResourceDefinition %s is not %s", name, cond)
			}
		}
		if v := crd.Labels[versionLabel]; v != "" {
			version = v
		}
	}
	gv := teardownv1alpha1.GroupVersion.String()
	list, err := c.Kube.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil {
		return "", fail(r, "discovery of %s: %s", gv, reason(err))
	}
	served := map[string]bool{}
	for _, res := range list.APIResources {
		served[res.Name] = true
	}
	for _, name := range CRDs {
		if plural, _, _ := strings.Cut(name, "."); !served[plural] {
			return "", fail(r, "%s is established but %s does not serve %s", name, gv, plural)
		}
	}
	r.Detail = fmt.Sprintf("%s established and served (%s)", strings.Join(CRDs, ", "), gv)
	return version, r
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// checkAdmissionPolicies: each policy and its binding exist, and the binding
// names the policy and enforces it (Deny).
func checkAdmissionPolicies(ctx context.Context, c Clients) Result {
	r := Result{Name: "admission policies"}
	api := c.Kube.AdmissionregistrationV1()
	for _, name := range AdmissionPolicies {
		if _, err := api.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fail(r, "ValidatingAdmissionPolicy %s: %s (docs/admission.md: a shared cluster must keep them)", name, reason(err))
		}
		binding, err := api.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fail(r, "ValidatingAdmissionPolicyBinding %s: %s (the policy is installed but not enforced)", name, reason(err))
		}
		if binding.Spec.PolicyName != name || !denies(binding.Spec.ValidationActions) {
			return fail(r, "ValidatingAdmissionPolicyBinding %s does not enforce policy %s with Deny", name, name)
		}
	}
	r.Detail = fmt.Sprintf("%d policies bound with Deny", len(AdmissionPolicies))
	return r
}

func denies(actions []admissionregistrationv1.ValidationAction) bool {
	for _, a := range actions {
		if a == admissionregistrationv1.Deny {
			return true
		}
	}
	return false
}

// checkController: a controller holds the leader Lease and renewed it within
// its duration; the Deployment, when there is one, has a ready replica. It
// returns the Deployment's version label.
func checkController(ctx context.Context, c Clients, opts Options) (string, Result) {
	r := Result{Name: "controller"}
	lease, err := c.Kube.CoordinationV1().Leases(opts.Namespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", fail(r, "no Lease %s/%s: no teardown-controller has become leader in namespace %s (is it running in another namespace?)", opts.Namespace, LeaseName, opts.Namespace)
		}
		return "", fail(r, "reading Lease %s/%s: %s", opts.Namespace, LeaseName, reason(err))
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" {
		return "", fail(r, "Lease %s/%s has no holder: no controller leads (the last one let go)", opts.Namespace, LeaseName)
	}
	duration := defaultLeaseDuration
	if lease.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	if lease.Spec.RenewTime == nil {
		return "", fail(r, "Lease %s/%s held by %s was never renewed", opts.Namespace, LeaseName, holder)
	}
	age := opts.Now().Sub(lease.Spec.RenewTime.Time).Round(time.Second)
	if age > duration+leaseRenewalSlack {
		return "", fail(r, "the leader %s last renewed Lease %s/%s %s ago, longer than its %s duration: it is gone or cannot reach the API server", holder, opts.Namespace, LeaseName, age, duration)
	}
	r.Detail = fmt.Sprintf("%s leads (Lease %s/%s renewed %s ago)", holder, opts.Namespace, LeaseName, age)
	deploy, err := c.Kube.AppsV1().Deployments(opts.Namespace).Get(ctx, DeploymentName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Run outside a Deployment (a process beside the cluster): the
		// Lease is the proof.
		return "", r
	case err != nil:
		return "", fail(r, "reading Deployment %s/%s: %s", opts.Namespace, DeploymentName, reason(err))
	}
	if deploy.Status.ReadyReplicas == 0 {
		return "", fail(r, "Deployment %s/%s has no ready replica (its /readyz fails: kubectl -n %s describe pods -l app.kubernetes.io/name=teardown-controller)", opts.Namespace, DeploymentName, opts.Namespace)
	}
	r.Detail += fmt.Sprintf("; Deployment %s %d/%d ready", DeploymentName, deploy.Status.ReadyReplicas, deploy.Status.Replicas)
	return deploy.Labels[versionLabel], r
}

// checkWebhook: an installed webhook configuration has a CA bundle on each
// webhook and a ready endpoint behind its Service. The endpoint is ready only
// while the controller's /readyz passes, which covers its webhook server. An
// absent configuration is the webhook turned off.
func checkWebhook(ctx context.Context, c Clients, namespace, name, config string, mutating bool) Result {
	r := Result{Name: name}
	var clients []admissionregistrationv1.WebhookClientConfig
	var err error
	if mutating {
		var cfg *admissionregistrationv1.MutatingWebhookConfiguration
		if cfg, err = c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, config, metav1.GetOptions{}); err == nil {
			for _, w := range cfg.Webhooks {
				clients = append(clients, w.ClientConfig)
			}
		}
	} else {
		var cfg *admissionregistrationv1.ValidatingWebhookConfiguration
		if cfg, err = c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, config, metav1.GetOptions{}); err == nil {
			for _, w := range cfg.Webhooks {
				clients = append(clients, w.ClientConfig)
			}
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		r.Detail = "not enabled (no " + config + ")"
		return r
	case err != nil:
		return fail(r, "reading %s: %s", config, reason(err))
	}
	for _, cc := range clients {
		if len(cc.CABundle) == 0 {
			return fail(r, "%s has a webhook without a caBundle: the API server cannot trust the controller's certificate (with cert-manager: is its CA injector running?)", config)
		}
		if cc.Service == nil {
			continue
		}
		if cc.Service.Namespace != namespace {
			return fail(r, "%s calls Service %s/%s, not one in the controller's namespace %s", config, cc.Service.Namespace, cc.Service.Name, namespace)
		}
		ready, err := readyEndpoints(ctx, c, cc.Service.Namespace, cc.Service.Name)
		if err != nil {
			return fail(r, "reading the endpoints of Service %s/%s: %s", cc.Service.Namespace, cc.Service.Name, reason(err))
		}
		if ready == 0 {
			return fail(r, "Service %s/%s of %s has no ready endpoint: the API server cannot reach the webhook", cc.Service.Namespace, cc.Service.Name, config)
		}
		r.Detail = fmt.Sprintf("%s: Service %s/%s has %d ready endpoint%s", config, cc.Service.Namespace, cc.Service.Name, ready, plural(ready))
	}
	if r.Detail == "" {
		r.Detail = config + " calls a URL: its reachability is not checked"
		r.Warning = true
	}
	return r
}

func readyEndpoints(ctx context.Context, c Clients, namespace, service string) (int, error) {
	slices, err := c.Kube.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: serviceNameLabel + "=" + service})
	if err != nil {
		return 0, err
	}
	ready := 0
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				ready++
			}
		}
	}
	return ready, nil
}

// A Go pseudo-version (v0.0.0-20261127005010-eb03352a1b2c) or "unknown" is
// a development build: compared, it would always differ.
var developmentVersion = regexp.MustCompile(`^unknown$|-\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// checkVersions: the CRDs and the controller come from one release; the
// checking binary of another release is worth a warning.
func checkVersions(crds, controller, client string) Result {
	r := Result{Name: "versions"}
	norm := func(v string) string { return strings.TrimPrefix(v, "v") }
	if crds != "" && controller != "" && norm(crds) != norm(controller) {
		return fail(r, "the CRDs are of %s but the controller of %s: upgrade them together (UPGRADING.md)", crds, controller)
	}
	installed := controller
	if installed == "" {
		installed = crds
	}
	switch {
	case installed == "":
		r.Detail = "the installed version is not labelled (app.kubernetes.io/version): not compared"
	case client == "" || developmentVersion.MatchString(client):
		r.Detail = "installed " + installed
	case norm(client) != norm(installed):
		r.Warning = true
		r.Detail = fmt.Sprintf("installed %s, this binary %s: a different release may read the cluster differently", installed, client)
	default:
		r.Detail = "installed " + installed + ", as this binary"
	}
	return r
}

func fail(r Result, format string, args ...any) Result {
	r.Failed = true
	r.Detail = fmt.Sprintf(format, args...)
	return r
}

// reason is an API error's short reason: NotFound, Forbidden and the like
// say what to do; the rest is the error.
func reason(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return "not found"
	case apierrors.IsForbidden(err):
		return "forbidden to this identity (" + err.Error() + ")"
	}
	return err.Error()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
