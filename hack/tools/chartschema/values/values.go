/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package values describes charts/teardown/values.yaml in Go, for the
// schema chartschema writes.
package values

import (
	"encoding/json"

	"github.com/invopop/jsonschema"
)

// Values is charts/teardown/values.yaml. Every field's comment becomes its
// description in values.schema.json; every struct refuses keys it does not
// name, so a typo such as crds.kepp fails helm install instead of being
// ignored. Kubernetes objects passed through as they are (resources,
// affinity, tolerations…) are Object: any keys, checked by the API server.
// internal/chart's TestSchemaMatchesValues keeps this and values.yaml in step.
type Values struct {
	Image Image `json:"image"`
	// Secrets for pulling the image: [{name: my-registry}].
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets"`
	// Controller replicas. More than one needs leaderElection.enabled: one
	// acts, the others wait and take over.
	ReplicaCount   int            `json:"replicaCount" jsonschema:"minimum=0"`
	ServiceAccount ServiceAccount `json:"serviceAccount"`
	RBAC           RBAC           `json:"rbac"`
	CRDs           CRDs           `json:"crds"`
	LeaderElection Toggle         `json:"leaderElection"`
	// The controller container's resources (requests, limits); limits.memory
	// is also its GOMEMLIMIT.
	Resources           Object              `json:"resources"`
	PodDisruptionBudget PodDisruptionBudget `json:"podDisruptionBudget"`
	// The pod's securityContext.
	SecurityContext Object `json:"securityContext"`
	// The containers' securityContext (the controller's and the uninstall
	// hook's).
	ContainerSecurityContext Object `json:"containerSecurityContext"`
	// --default-service-account: the ServiceAccount a TeardownPolicy without
	// spec.serviceAccountName acts as; empty makes serviceAccountName
	// required.
	DefaultServiceAccount string `json:"defaultServiceAccount"`
	// --target-workers: target objects cleaned up at once; attaching gets four times as many workers.
	TargetWorkers int `json:"targetWorkers" jsonschema:"minimum=1"`
	// --webhook-calls-per-tenant: webhook calls in flight at once of one namespace's TeardownPolicies (or of one ClusterTeardownPolicy); more wait their turn.
	WebhookCallsPerTenant int `json:"webhookCallsPerTenant" jsonschema:"minimum=1"`
	// --attempt-timeout: longest one run of a policy's steps for one object.
	AttemptTimeout Duration `json:"attemptTimeout"`
	// --status-interval: how often policy status is refreshed.
	StatusInterval Duration `json:"statusInterval"`
	Diagnose       Diagnose `json:"diagnose"`
	// --cluster-resource-namespace; empty: the release namespace.
	ClusterResourceNamespace string       `json:"clusterResourceNamespace"`
	WebhookSteps             WebhookSteps `json:"webhookSteps"`
	// --zap-log-level.
	LogLevel LogLevel `json:"logLevel"`
	// More flags of the controller, appended as given.
	ExtraArgs []string `json:"extraArgs"`
	// More environment variables of the controller (EnvVar objects).
	ExtraEnv []Object `json:"extraEnv"`
	// RBAC rules (PolicyRule objects) on the kinds the policies guard,
	// aggregated into ClusterRole teardown-controller-targets.
	TargetRules       []Object         `json:"targetRules"`
	Metrics           Metrics          `json:"metrics"`
	Webhook           Webhook          `json:"webhook"`
	InUseWebhook      InUseWebhook     `json:"inUseWebhook"`
	AdmissionPolicies Toggle           `json:"admissionPolicies"`
	NetworkPolicy     NetworkPolicy    `json:"networkPolicy"`
	ServiceMonitor    ScrapeMonitor    `json:"serviceMonitor"`
	PodMonitor        ScrapeMonitor    `json:"podMonitor"`
	PrometheusRule    Monitor          `json:"prometheusRule"`
	GrafanaDashboard  GrafanaDashboard `json:"grafanaDashboard"`
	UninstallHook     UninstallHook    `json:"uninstallHook"`
	Check             Check            `json:"check"`
	// More annotations on the controller's pods.
	PodAnnotations map[string]string `json:"podAnnotations"`
	// More labels on the controller's pods.
	PodLabels map[string]string `json:"podLabels"`
	// The pods' nodeSelector.
	NodeSelector map[string]string `json:"nodeSelector"`
	// Toleration objects.
	Tolerations []Object `json:"tolerations"`
	// The pod's affinity; empty: spread the replicas over nodes (preferred).
	Affinity Object `json:"affinity"`
	// TopologySpreadConstraint objects.
	TopologySpreadConstraints []Object `json:"topologySpreadConstraints"`
	// The pod's priorityClassName.
	PriorityClassName string `json:"priorityClassName"`
	// The pod's terminationGracePeriodSeconds: a replica that stops hands
	// its Lease over at once, so a rollout does not wait for it to expire.
	TerminationGracePeriodSeconds int `json:"terminationGracePeriodSeconds" jsonschema:"minimum=0"`
}

// The teardown-controller image (also the uninstall hook's).
type Image struct {
	// The image's repository (with its registry host).
	Repository string `json:"repository" jsonschema:"minLength=1"`
	// A mirror (host, and path if any) that replaces repository's registry: mirror.example.com/ghcr pulls mirror.example.com/ghcr/teardown-dev/teardown-controller.
	Registry string `json:"registry"`
	// Used when digest is empty; empty: the chart's appVersion.
	Tag string `json:"tag"`
	// sha256:…; when set the image is pulled by digest and tag is not used.
	Digest string `json:"digest" jsonschema:"pattern=^(sha256:[a-f0-9]{64})?$"`
	// The containers' imagePullPolicy.
	PullPolicy string `json:"pullPolicy" jsonschema:"enum=Always,enum=IfNotPresent,enum=Never"`
}

type LocalObjectReference struct {
	Name string `json:"name" jsonschema:"minLength=1"`
}

type ServiceAccount struct {
	// The controller's ServiceAccount; the admission policies exempt exactly
	// it.
	Name        string            `json:"name" jsonschema:"minLength=1"`
	Annotations map[string]string `json:"annotations"`
}

type RBAC struct {
	// Ship the ClusterRoles teardown-view and teardown-edit, aggregated into
	// the built-in view, edit and admin roles (TeardownPolicy only).
	AggregateClusterRoles bool `json:"aggregateClusterRoles"`
}

type CRDs struct {
	// Install the CRDs with the chart.
	Enabled bool `json:"enabled"`
	// Keep them on helm uninstall (deleting a CRD deletes every policy of
	// its kind).
	Keep bool `json:"keep"`
}

// An opt-in NetworkPolicy: ingress to the controller's pods only on its probe, metrics and webhook ports; egress stays open (the API server and the webhook receivers policies name).
type NetworkPolicy struct {
	Enabled bool `json:"enabled"`
	// Who may scrape the metrics port (NetworkPolicyPeer objects); empty: anyone (the endpoint still authorizes each client when metrics.secure).
	MetricsFrom []Object `json:"metricsFrom"`
}

type Toggle struct {
	Enabled bool `json:"enabled"`
}

// Rendered only with more than one replica: with one, any budget either
// blocks node drains or allows nothing.
type PodDisruptionBudget struct {
	Enabled bool `json:"enabled"`
	// Used first when not empty; must be below replicaCount.
	MinAvailable IntOrString `json:"minAvailable"`
	// Used when minAvailable is empty; must not be 0.
	MaxUnavailable IntOrString `json:"maxUnavailable"`
}

// The controller's own diagnosis of stuck objects.
type Diagnose struct {
	// --diagnose-after; 0 turns the diagnosis off.
	After Duration `json:"after"`
	// --diagnose-interval.
	Interval Duration `json:"interval"`
	// --diagnose-kinds: resources whose every terminating object is
	// diagnosed, such as namespaces.
	Kinds []string `json:"kinds"`
	// Grant the read rights of ClusterRole teardown-controller-diagnose.
	ReadRights bool `json:"readRights"`
}

type WebhookSteps struct {
	// --webhook-allowed-cidrs.
	AllowedCIDRs []string `json:"allowedCIDRs"`
	// --webhook-allow-http.
	AllowHTTP bool `json:"allowHTTP"`
}

type Metrics struct {
	// Serve metrics (--metrics-bind-address); the monitors need it.
	Enabled bool `json:"enabled"`
	Port    int  `json:"port" jsonschema:"minimum=1,maximum=65535"`
	// --metrics-secure: HTTPS for authorized clients only; the monitors
	// scrape over HTTPS and need it.
	Secure bool `json:"secure"`
	// A Secret with tls.crt and tls.key for the metrics endpoint; empty:
	// self-signed.
	CertSecret string `json:"certSecret"`
	// Subjects (RBAC Subject objects) bound to ClusterRole
	// teardown-metrics-reader.
	ReaderSubjects []Object `json:"readerSubjects"`
}

// The attach-at-create admission webhook.
type Webhook struct {
	Enabled        bool        `json:"enabled"`
	Port           int         `json:"port" jsonschema:"minimum=1,maximum=65535"`
	TimeoutSeconds int         `json:"timeoutSeconds" jsonschema:"minimum=1,maximum=30"`
	CertManager    CertManager `json:"certManager"`
	// Validity of the certificate the chart makes, in days.
	SelfSignedValidityDays int `json:"selfSignedValidityDays" jsonschema:"minimum=1"`
}

// The webhooks' serving certificate from cert-manager (the choice under
// Argo CD: docs/helm.md).
type CertManager struct {
	Enabled bool `json:"enabled"`
	// The issuer (name, kind, group); empty: a self-signed Issuer of the
	// chart.
	IssuerRef Object `json:"issuerRef"`
}

// The in-use admission webhook, on by default; the controller narrows it
// to the namespaces where unused steps hold objects.
type InUseWebhook struct {
	// false opts out: a pod created while an object an unused step holds
	// is being deleted can lose it.
	Enabled bool `json:"enabled"`
	// The configuration's failurePolicy and --inuse-webhook-failure-policy.
	FailurePolicy  string `json:"failurePolicy" jsonschema:"enum=Ignore,enum=Fail"`
	TimeoutSeconds int    `json:"timeoutSeconds" jsonschema:"minimum=1,maximum=30"`
	// --unused-release-grace.
	ReleaseGrace Duration `json:"releaseGrace"`
}

// A Prometheus Operator object of config/monitoring.
type Monitor struct {
	Enabled bool              `json:"enabled"`
	Labels  map[string]string `json:"labels"`
}

// A ServiceMonitor or PodMonitor: on or off, its labels, and how its
// endpoint is scraped.
type ScrapeMonitor struct {
	Enabled bool              `json:"enabled"`
	Labels  map[string]string `json:"labels"`
	// How often Prometheus scrapes the controller.
	Interval PromDuration `json:"interval"`
	// How long a scrape may take; empty: Prometheus's default.
	ScrapeTimeout PromDuration `json:"scrapeTimeout"`
	// The endpoint's tlsConfig, as the Prometheus Operator reads it: the
	// default trusts any certificate (the controller serves a self-signed
	// one unless given its own); with a certificate of your CA, set ca and
	// serverName instead. Empty: none.
	TLSConfig Object `json:"tlsConfig"`
}

// PromDuration is a Prometheus duration (30s, 1m, 1h30m); empty where allowed.
type PromDuration string

func (PromDuration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: `^(|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`}
}

// The Grafana dashboard as a ConfigMap.
type GrafanaDashboard struct {
	Enabled bool `json:"enabled"`
	// Where the ConfigMap goes; empty: the release namespace.
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// The pre-delete hook Job that deletes every policy and waits until they
// released what they guard.
type UninstallHook struct {
	Enabled bool `json:"enabled"`
	// teardown-controller uninstall --timeout; keep helm uninstall's longer.
	Timeout Duration `json:"timeout"`
	// The Job container's resources.
	Resources   Object            `json:"resources"`
	Annotations map[string]string `json:"annotations"`
}

// The install check: a Pod running teardown-controller check, as helm test
// and, with PostInstall, after install and upgrade.
type Check struct {
	// Also run after every install and upgrade, waiting up to timeout.
	PostInstall bool `json:"postInstall"`
	// teardown-controller check --wait after install and upgrade; keep helm install's longer.
	Timeout Duration `json:"timeout"`
	// The Pod container's resources.
	Resources Object `json:"resources"`
}

// Object is a Kubernetes object passed through as it is (resources,
// affinity, a toleration…): any keys, which the API server checks.
type Object map[string]any

func (Object) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object"}
}

// Duration is a Go duration, as the controller's flags take it (90s, 2m,
// 1h30m); 0 is allowed, also as a number (--set diagnose.after=0).
type Duration string

func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string", Pattern: `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`},
		{Type: "integer", Enum: []any{0}},
	}}
}

// IntOrString is a count or a percentage, as a PodDisruptionBudget takes
// it; empty: not set.
type IntOrString string

func (IntOrString) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: json.Number("0")},
		{Type: "string", Pattern: `^([0-9]+%?)?$`},
	}}
}

// LogLevel is what --zap-log-level takes: a level's name, or a number above
// 0 for more verbose logs.
type LogLevel string

func (LogLevel) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string", Enum: []any{"debug", "info", "error", "panic"}},
		{Type: "string", Pattern: `^[1-9][0-9]*$`},
		{Type: "integer", Minimum: json.Number("1")},
	}}
}
