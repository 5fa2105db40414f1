/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TeardownPolicy guards objects of its own namespace with a finalizer and,
// when one of them is deleted, runs ordered cleanup steps before releasing
// it. Its targets, Jobs and the resources its steps touch stay in its
// namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=tdp,categories=teardown
// +kubebuilder:printcolumn:name="Finalizer",type=string,JSONPath=`.status.finalizer`
// +kubebuilder:printcolumn:name="Attach",type=string,JSONPath=`.spec.attach`
// +kubebuilder:printcolumn:name="Guarded",type=integer,JSONPath=`.status.guarded`
// +kubebuilder:printcolumn:name="Terminating",type=integer,JSONPath=`.status.terminating`
// +kubebuilder:printcolumn:name="Blocked",type=integer,JSONPath=`.status.blocked`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || has(self.spec.finalizer) || size(self.metadata.name) <= 63",message="a policy without spec.finalizer needs a name of at most 63 characters, because its finalizer key is derived from the name",fieldPath=".spec"
type TeardownPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec says which objects of this namespace to guard and how to tear
	// them down.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.targets) || self.targets.all(t, !has(t.namespaceSelector))",message="namespaceSelector is only allowed on a ClusterTeardownPolicy: a TeardownPolicy only guards objects of its own namespace"
	// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.all(s, !has(s.job) || !has(s.job.__namespace__))",message="job.namespace is only allowed on a ClusterTeardownPolicy: a TeardownPolicy runs its Jobs in its own namespace"
	// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.all(s, (!has(s.wait) || s.wait.resources.all(r, !has(r.namespaceSelector))) && (!has(s.delete) || s.delete.resources.all(r, !has(r.namespaceSelector))))",message="namespaceSelector in a wait or delete step is only allowed on a ClusterTeardownPolicy: a TeardownPolicy's steps look only in its own namespace"
	Spec TeardownPolicySpec `json:"spec"`

	// status is what the controller observed and did; it writes it, users
	// read it.
	// +optional
	Status TeardownPolicyStatus `json:"status,omitzero"`
}

// TeardownPolicyList is a list of TeardownPolicy.
//
// +kubebuilder:object:root=true
type TeardownPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the policies.
	Items []TeardownPolicy `json:"items"`
}

// TeardownPolicySpec is the desired behaviour of a TeardownPolicy or a
// ClusterTeardownPolicy: which objects to guard and how to tear them down.
//
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || !self.steps.exists(s, has(s.unused)) || self.targets.all(t, t.kind != 'PersistentVolumeClaim')",message="an unused step cannot hold a PersistentVolumeClaim: Kubernetes already holds one while a pod uses it, with its finalizer kubernetes.io/pvc-protection"
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || !self.steps.exists(s, has(s.unused)) || self.targets.all(t, t.kind == 'PersistentVolumeClaim' || (t.apiVersion == 'v1' && t.kind in ['ServiceAccount', 'Secret', 'ConfigMap']) || (t.apiVersion == 'rbac.authorization.k8s.io/v1' && t.kind in ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding']))",message="an unused step holds only what pods use by reference: targets of a policy with an unused step must be v1 ServiceAccount, Secret or ConfigMap, or rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding or ClusterRoleBinding"
type TeardownPolicySpec struct {
	// finalizer is the key this policy puts in metadata.finalizers of the
	// objects it guards. It must be domain-qualified: a DNS subdomain that
	// contains a dot, a slash, then a name of at most 63 letters, digits,
	// '-', '_' or '.', such as example.com/cleanup or my.custom/finalizer.
	// Keys under kubernetes.io and k8s.io belong to Kubernetes and are
	// refused.
	//
	// When unset the controller derives the key from the policy's name:
	// teardown.dev/<name> for a ClusterTeardownPolicy and
	// <namespace>.teardown.dev/<name> for a TeardownPolicy, so that policies
	// with the same name in different namespaces never share a key. The key
	// in effect is shown in status.finalizer. In the teardown.dev domain a
	// policy may use only its default key. Of the policies that share a key
	// for overlapping kinds one is served: a ClusterTeardownPolicy before any
	// TeardownPolicy, then the one in force, then the oldest
	// (docs/controller.md, "Key ownership").
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)+/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="finalizer must be a domain-qualified key such as example.com/cleanup: a lowercase DNS name containing a dot, a slash, then a name"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^/]*/[^/]*$') || self.matches('^[^/]{1,253}/[^/]{1,63}$')",message="finalizer may have at most 253 characters before the slash and 63 after it"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([^/]*[.])?(kubernetes[.]io|k8s[.]io)/')",message="finalizer keys under kubernetes.io and k8s.io belong to Kubernetes: use a domain of your own"
	Finalizer string `json:"finalizer,omitempty"`

	// attach says how objects come to carry the finalizer. Automatic (the
	// default): the controller adds it to every object that matches a
	// target. Declared: the controller only acts on matching objects that
	// already carry it, for example because their manifest lists it.
	// +optional
	// +kubebuilder:default=Automatic
	Attach AttachMode `json:"attach,omitempty"`

	// targets are the objects this policy guards: every object of one of
	// these kinds whose labels match the target's selector.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Targets []Target `json:"targets"`

	// steps run in order when a guarded object is deleted; the finalizer is
	// removed once the last one has succeeded. Each step must be idempotent:
	// the controller may run a step again after a restart. With no steps the
	// policy only delays deletion until the controller has seen it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(s, self.exists_one(t, t.name == s.name))",message="step names must be unique within a policy"
	Steps []Step `json:"steps,omitempty"`

	// deadline bounds the whole teardown of one object, counted from its
	// deletionTimestamp, such as 30m or 2h. When it passes, onDeadline
	// applies. Unset means no deadline.
	//
	// Durations here and in timeouts have at most three parts, each at most
	// 99999h, 9999999m, 999999999s (and so on down to ns), so that no value
	// the schema accepts overflows a duration: a larger one is refused with
	// the field's own message.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?h|[0-9]{1,7}([.][0-9]{1,9})?m|[0-9]{1,9}([.][0-9]{1,9})?s|[0-9]{1,12}([.][0-9]{1,9})?ms|[0-9]{1,15}([.][0-9]{1,9})?us|[0-9]{1,18}ns){1,3}$') && duration(self) > duration('0s')",message="deadline must be a positive duration such as 90s, 30m or 1h30m"
	Deadline *metav1.Duration `json:"deadline,omitempty"`

	// onDeadline says what happens when the deadline passes. Block (the
	// default): keep the finalizer, so the object stays Terminating, and
	// report it as blocked (reason DeadlineExceeded). Release: remove the
	// finalizer without running the remaining steps, with a
	// FinalizerReleased Warning event saying what was skipped.
	// +optional
	// +kubebuilder:default=Block
	OnDeadline DeadlineAction `json:"onDeadline,omitempty"`

	// serviceAccountName names the ServiceAccount of a TeardownPolicy's
	// namespace whose identity every step acts with: the controller
	// impersonates it for every read, write and delete of its steps and
	// creates its Jobs as it, and the Jobs' pods run as it. The policy
	// guards only objects that ServiceAccount may patch; what it lacks is
	// reported in the Ready condition before anything is guarded. Unset
	// means the controller's --default-service-account ("default" unless
	// the operator changed it). A ClusterTeardownPolicy acts as the
	// controller and may not set it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// onPolicyDeletion says what deleting this policy does to guarded
	// objects that are already being deleted. Finish (the default): their
	// cleanup runs to the end (or to their deadline) under the version of
	// the policy that guarded them, and the policy goes once they are done.
	// Release: they are let go at once without the rest of their cleanup,
	// each with a FinalizerReleased Warning event, except in a namespace
	// being deleted, where nothing is released without its cleanup. Objects
	// not being deleted are released either way (again, not in a namespace
	// being deleted). A policy's spec cannot change once it is being
	// deleted.
	// +optional
	// +kubebuilder:default=Finish
	OnPolicyDeletion PolicyDeletionAction `json:"onPolicyDeletion,omitempty"`
}

// PolicyDeletionAction says what deleting a policy does to the teardowns it
// has in progress.
//
// +kubebuilder:validation:Enum=Finish;Release
type PolicyDeletionAction string

const (
	// PolicyDeletionFinish lets teardowns in progress finish first.
	PolicyDeletionFinish PolicyDeletionAction = "Finish"
	// PolicyDeletionRelease releases objects being deleted without the rest
	// of their cleanup.
	PolicyDeletionRelease PolicyDeletionAction = "Release"
)

// AttachMode says how objects come to carry a policy's finalizer.
//
// +kubebuilder:validation:Enum=Automatic;Declared
type AttachMode string

const (
	// AttachAutomatic adds the finalizer to every object that matches.
	AttachAutomatic AttachMode = "Automatic"
	// AttachDeclared only acts on objects that already carry the finalizer.
	AttachDeclared AttachMode = "Declared"
)

// DeadlineAction says what happens when a teardown outlives its deadline.
//
// +kubebuilder:validation:Enum=Block;Release
type DeadlineAction string

const (
	// DeadlineBlock keeps the finalizer and reports the object as blocked.
	DeadlineBlock DeadlineAction = "Block"
	// DeadlineRelease removes the finalizer and records the skipped steps.
	DeadlineRelease DeadlineAction = "Release"
)

// Target selects objects a policy guards.
type Target struct {
	// apiVersion is the group and version of the kind, such as apps/v1, or v1
	// for the core group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	APIVersion string `json:"apiVersion"`

	// kind is the kind of the objects, such as Service or Deployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// selector selects the objects of this kind by label. It is required so
	// that guarding every object is a visible choice: write selector: {} for
	// that.
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// namespaceSelector, only on a ClusterTeardownPolicy, limits the target
	// to objects in namespaces whose labels match; such a target matches no
	// cluster-scoped object. Unset means every namespace, and cluster-scoped
	// objects too.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// Step is one cleanup action of a teardown. Exactly one of webhook, job,
// delete, wait and unused is set.
//
// +kubebuilder:validation:XValidation:rule="has(self.webhook) || has(self.job) || has(self.delete) || has(self.wait) || has(self.unused)",message="a step needs an action: set one of webhook, job, delete, wait or unused"
// +kubebuilder:validation:XValidation:rule="[has(self.webhook), has(self.job), has(self.delete), has(self.wait), has(self.unused)].filter(x, x).size() <= 1",message="a step has exactly one action: split webhook, job, delete, wait and unused into separate steps"
type Step struct {
	// name identifies the step in status, events and the target's progress
	// annotation. It is a DNS label: lowercase letters, digits and '-', at
	// most 63 characters, unique within the policy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// webhook calls an HTTP endpoint with the object being torn down.
	// +optional
	Webhook *WebhookAction `json:"webhook,omitempty"`

	// job runs a Job and waits for it to succeed.
	// +optional
	Job *JobAction `json:"job,omitempty"`

	// delete deletes other objects and waits until they are gone.
	// +optional
	Delete *DeleteAction `json:"delete,omitempty"`

	// wait waits until a CEL condition over a set of objects holds.
	// +optional
	Wait *WaitAction `json:"wait,omitempty"`

	// unused waits until no pod uses the object being torn down: no pod
	// runs as it (a ServiceAccount), mounts or reads it (a Secret, a
	// ConfigMap), or runs as a subject it grants rights to (a Role,
	// ClusterRole, RoleBinding or ClusterRoleBinding). Written unused: {}.
	// +optional
	Unused *UnusedAction `json:"unused,omitempty"`

	// timeout bounds the step, counted from when it started (time spent on
	// transient errors included), such as 5m. When it passes the step has
	// failed definitively and onFailure applies. Unset means
	// the step has no limit of its own; the policy's deadline still applies.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?h|[0-9]{1,7}([.][0-9]{1,9})?m|[0-9]{1,9}([.][0-9]{1,9})?s|[0-9]{1,12}([.][0-9]{1,9})?ms|[0-9]{1,15}([.][0-9]{1,9})?us|[0-9]{1,18}ns){1,3}$') && duration(self) > duration('0s')",message="timeout must be a positive duration such as 30s, 5m or 1h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// onFailure says what happens when the step fails definitively: the
	// webhook answers Failure, a permanent 4xx (400, 401, 403, 404, 405, 410,
	// 422) or a redirect, the Job fails, or the step's timeout passes. Any
	// other error (connection errors, 5xx, API errors, ...) is transient: the
	// step is retried with backoff whatever onFailure says, until it
	// succeeds, its timeout passes or the deadline acts. Retry (the default):
	// run the step again with backoff; the object stays until it succeeds or
	// the deadline passes. Continue: log the failure and go on with the next
	// step. Release: remove the finalizer without running the remaining
	// steps, with a FinalizerReleased Warning event.
	// +optional
	// +kubebuilder:default=Retry
	OnFailure FailureAction `json:"onFailure,omitempty"`
}

// FailureAction says what happens when a step fails.
//
// +kubebuilder:validation:Enum=Retry;Continue;Release
type FailureAction string

const (
	// FailureRetry runs the step again with backoff.
	FailureRetry FailureAction = "Retry"
	// FailureContinue records the failure and goes on with the next step.
	FailureContinue FailureAction = "Continue"
	// FailureRelease records the failure and removes the finalizer.
	FailureRelease FailureAction = "Release"
)

// WebhookAction calls an HTTP endpoint. The controller POSTs the object being
// torn down and its context; the answer says done, in progress (call again
// after N seconds) or failed, with a message. A 429 answer's Retry-After is
// honoured; Retry-After and retryAfterSeconds are capped at 10 minutes.
// Redirects are never followed: a 3xx answer is a definitive failure.
// Exactly one of url and service is set.
//
// +kubebuilder:validation:XValidation:rule="has(self.url) != has(self.service)",message="a webhook needs exactly one of url or service"
type WebhookAction struct {
	// url is the absolute http:// or https:// URL to POST to, such as
	// https://dns-cleaner.shop.svc/cleanup. The controller calls plain
	// http:// only when it runs with --webhook-allow-http, and never a
	// loopback, link-local, cloud metadata or unspecified address outside
	// its --webhook-allowed-cidrs. A TeardownPolicy's host is read as
	// Kubernetes DNS reads it and must name a Service or pod of its own
	// namespace (such as cleaner.shop.svc), or an IP address, or an outside
	// name written absolute with a trailing dot (hooks.example.com.).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="url must be an absolute http:// or https:// URL, such as https://cleaner.example.svc/cleanup"
	URL *string `json:"url,omitempty"`

	// service is an in-cluster Service to call over HTTPS, as
	// https://<name>.<namespace>.svc:<port><path>. A TeardownPolicy calls
	// Services of its own namespace only.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`

	// caBundle is a PEM bundle of the CAs that sign the endpoint's serving
	// certificate, base64-encoded in YAML. Unset means the system trust
	// roots.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CABundle []byte `json:"caBundle,omitempty"`

	// timeout bounds one call, such as 10s (the default). It must be
	// positive and at most 5m; a longer cleanup answers "in progress" and is
	// called again.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?h|[0-9]{1,7}([.][0-9]{1,9})?m|[0-9]{1,9}([.][0-9]{1,9})?s|[0-9]{1,12}([.][0-9]{1,9})?ms|[0-9]{1,15}([.][0-9]{1,9})?us|[0-9]{1,18}ns){1,3}$') && duration(self) > duration('0s') && duration(self) <= duration('5m')",message="webhook timeout must be a positive duration of at most 5m, such as 10s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// signingSecretRef names a key of a Secret holding the shared secret
	// the controller signs each request with, in the Standard Webhooks form
	// (webhook-id, webhook-timestamp, webhook-signature: HMAC-SHA256 over
	// "id.timestamp.body"; a whsec_ value is base64-decoded), so the
	// receiver can check who called with a Standard Webhooks library. The
	// older Teardown-Signature header is sent too, for one release. The Secret is in the policy's
	// namespace for a TeardownPolicy (read as its ServiceAccount), in the
	// controller's namespace for a ClusterTeardownPolicy.
	// +optional
	SigningSecretRef *SecretKeyReference `json:"signingSecretRef,omitempty"`
}

// SecretKeyReference names a key of a Secret.
type SecretKeyReference struct {
	// name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key is the key in the Secret's data; "secret" by default.
	// +optional
	// +kubebuilder:default=secret
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// ServiceReference names a port of an in-cluster Service.
type ServiceReference struct {
	// namespace is the namespace of the Service.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// name is the name of the Service.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// port is the Service port to call; 443 by default.
	// +optional
	// +kubebuilder:default=443
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// path is the URL path to POST to, such as /cleanup; / by default.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="path must start with /"
	Path *string `json:"path,omitempty"`
}

// JobAction runs a Job and waits for it to succeed; a failed Job is a failed
// step.
type JobAction struct {
	// template is the Job to create for each object torn down.
	// +required
	Template JobTemplate `json:"template"`

	// namespace is where the Job runs. It is required on a
	// ClusterTeardownPolicy and not allowed on a TeardownPolicy, whose Jobs
	// run in its own namespace, as its ServiceAccount (a template naming
	// another ServiceAccount makes the policy Ready=False, reason
	// InvalidJobTemplate). A Terminating namespace refuses new objects,
	// Jobs included: to clean up before a namespace goes, run the Job in
	// another namespace from a ClusterTeardownPolicy.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
}

// JobTemplate describes a Job, as a batch/v1 JobTemplateSpec does.
type JobTemplate struct {
	// metadata holds labels and annotations for the Job.
	// +optional
	Metadata JobTemplateMetadata `json:"metadata,omitzero"`

	// spec is a batch/v1 JobSpec. It is stored as given, which keeps this
	// CRD small, and checked with a server-side dry run of the Job when the
	// policy is served: a spec the API server refuses makes the policy
	// Ready=False, reason InvalidJobTemplate.
	// +required
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Spec batchv1.JobSpec `json:"spec"`
}

// JobTemplateMetadata is the metadata a Job created from a template gets.
type JobTemplateMetadata struct {
	// labels are added to the Job.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to the Job.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DeleteAction deletes objects and waits until every one is gone (a GET
// answers 404), so the step also waits for their own finalizers.
type DeleteAction struct {
	// resources select the objects to delete. A TeardownPolicy's steps reach
	// only namespaced kinds, in its own namespace, as its ServiceAccount. A
	// ClusterTeardownPolicy's steps act as the controller: namespaced kinds
	// are looked up in the namespace of the object being torn down, or in
	// every namespace when that object is cluster-scoped; cluster-scoped
	// kinds cluster-wide. Every selector must be non-empty, so that a step
	// never deletes every object of a kind by accident.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(r, (has(r.selector.matchLabels) && size(r.selector.matchLabels) > 0) || (has(r.selector.matchExpressions) && size(r.selector.matchExpressions) > 0))",message="every resource of a delete step needs a non-empty selector: an empty one would delete every object of that kind"
	Resources []ResourceSelector `json:"resources"`

	// propagationPolicy is passed to each DELETE: Foreground (the default;
	// the object goes once its dependents are gone), Background (the object
	// goes first, the garbage collector removes dependents afterwards) or
	// Orphan (dependents are kept).
	// +optional
	// +kubebuilder:default=Foreground
	// +kubebuilder:validation:Enum=Foreground;Background;Orphan
	PropagationPolicy metav1.DeletionPropagation `json:"propagationPolicy,omitempty"`
}

// WaitAction waits until a CEL condition over a set of objects holds.
type WaitAction struct {
	// resources select the objects the condition looks at, in the same
	// namespace as for a delete step. selector: {} selects every object of
	// the kind.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Resources []ResourceSelector `json:"resources"`

	// condition is a CEL expression that must evaluate to true for the step
	// to succeed. The variable objects is the list of every object the
	// resources select, such as size(objects) == 0 (the default) or
	// objects.all(o, o.status.phase == 'Released'). The controller compiles
	// it and reports a bad expression as the policy condition Ready=False,
	// reason InvalidCondition.
	// +optional
	// +kubebuilder:default="size(objects) == 0"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Condition string `json:"condition,omitempty"`

	// include says which selected objects the condition sees. All (unset
	// means All): every one, so the default condition holds the step while
	// any exists, those nobody is deleting included; the step's message
	// says how many of them are not being deleted. Deleting: only those
	// being deleted (with a deletionTimestamp), so the step waits for the
	// deletions under way and lets the others be. For an operator's
	// Deployment, All keeps the operator while any of its custom resources
	// exists (none is left with a finalizer no one will remove); Deleting
	// lets the operator go once those being deleted are finalized, and the
	// others keep their finalizer until an operator runs again
	// (docs/controller.md, "Operator last").
	// +optional
	Include WaitInclude `json:"include,omitempty"`
}

// WaitInclude says which selected objects a wait step's condition sees.
//
// +kubebuilder:validation:Enum=All;Deleting
type WaitInclude string

const (
	// WaitIncludeAll: every selected object.
	WaitIncludeAll WaitInclude = "All"
	// WaitIncludeDeleting: only the selected objects being deleted.
	WaitIncludeDeleting WaitInclude = "Deleting"
)

// UnusedAction holds the object being torn down while a pod that exists uses
// it, found by reference, not by selector. A pod counts until it is gone
// (a pod being deleted counts whatever its phase), except a pod that
// finished (phase Succeeded or Failed) and is not being deleted. A
// TeardownPolicy sees only the pods of its own namespace. It has no fields
// yet: write unused: {}.
type UnusedAction struct{}

// ResourceSelector selects objects of one kind by label.
type ResourceSelector struct {
	// apiVersion is the group and version of the kind, such as apps/v1, or v1
	// for the core group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	APIVersion string `json:"apiVersion"`

	// kind is the kind of the objects, such as Pod or DaemonSet.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// selector selects the objects by label.
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// namespaceSelector, only on a ClusterTeardownPolicy and only for a
	// namespaced kind, says which namespaces the step looks in, as a
	// NetworkPolicy peer's does: unset, the namespace of the object being
	// torn down (every namespace when that object is cluster-scoped, the
	// Namespace itself when it is one); {} every namespace; with labels,
	// the namespaces whose labels match. A ClusterTeardownPolicy guarding
	// an operator's Deployment uses it to wait for, or delete, the
	// operator's custom resources in every namespace (docs/controller.md,
	// "Operator last").
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// TeardownPolicyStatus is what the controller observed and did for a policy.
type TeardownPolicyStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are the policy's conditions. Ready is True (reason Serving)
	// when every target kind is known, allowed by RBAC and watched, and
	// False with a reason from conditions.go otherwise.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// finalizer is the finalizer key in effect: spec.finalizer, or the one
	// derived from the policy's name.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	Finalizer string `json:"finalizer,omitempty"`

	// servedSpec is the spec of the version in force, as JSON: the last
	// spec that passed every check. When the current spec cannot be
	// served, this version stays in force (after a restart of the
	// controller too), checked again first, so that the teardowns it
	// started finish under the steps that guarded them.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	ServedSpec string `json:"servedSpec,omitempty"`

	// servedGeneration is the policy's generation whose spec servedSpec
	// is.
	// +optional
	ServedGeneration int64 `json:"servedGeneration,omitempty"`

	// boundRecordsSince is when a controller that binds its step records
	// to their object's UID first served this policy (set once). A step
	// record without that UID, as an earlier release wrote them, names
	// the policy that started a teardown only on an object created before
	// this time or in its second (the earlier release's: timestamps are
	// whole seconds); on a later object it reads as no record, since
	// anyone who creates an object can write one.
	// +optional
	BoundRecordsSince *metav1.Time `json:"boundRecordsSince,omitempty"`

	// kinds are the target kinds of the version in force, recorded with
	// finalizer so that what an edit stops guarding is known after a
	// restart.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Kinds []GroupVersionKind `json:"kinds,omitempty"`

	// retired lists the finalizer keys, per kind, that earlier versions of
	// the policy guarded and the version in force does not (its finalizer
	// changed, or the kind was dropped). The controller keeps serving them:
	// objects already being deleted finish their cleanup under them, and
	// the controller removes them from objects that are not being deleted
	// and that it had attached them to. An entry goes once no object in
	// scope carries its key.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Retired []RetiredKey `json:"retired,omitempty"`

	// startedTeardowns lists the teardowns this policy started on objects
	// that have no room for their step record (the API server refuses it:
	// reason ProgressRefused), so that which policy started them survives
	// a restart, a failover and another policy taking the key: the policy
	// named here finishes them, as a step record would say. Only the
	// controller writes it; an entry goes once its object no longer
	// carries the key. At most 100: past that the policy starts no more
	// such teardowns (they stay held, reason StartedTeardownsFull in the
	// object's progress) until one of them finishes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	StartedTeardowns []StartedTeardown `json:"startedTeardowns,omitempty"`

	// guarded is how many objects carry the finalizer.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Guarded int32 `json:"guarded"`

	// terminating is how many guarded objects are being deleted and torn
	// down.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Terminating int32 `json:"terminating"`

	// blocked is how many terminating objects did not finish their cleanup
	// at its first attempt: waiting on a step, failing, timed out, or past
	// the deadline with onDeadline: Block.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Blocked int32 `json:"blocked"`

	// released is how many finalizers the policy removed without their
	// cleanup finishing (a step's onFailure Release, onDeadline Release, an
	// object that no longer matches, a retired key, the policy's deletion)
	// since the current leader of the controller started. It is kept in
	// memory and starts again from 0 on a new leader; the metrics have the
	// history.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Released int32 `json:"released"`

	// blockedObjects lists blocked objects, longest-waiting first, at most 20
	// of them: what each waits on and since when. Refreshed every
	// --status-interval of the controller.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	BlockedObjects []BlockedObject `json:"blockedObjects,omitempty"`

	// recentFailures lists the blocked objects whose step failed (reason
	// StepFailed) or timed out (StepTimedOut), newest first, at most 20 of
	// them. Refreshed every --status-interval of the controller.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	RecentFailures []StepFailure `json:"recentFailures,omitempty"`

	// refused is how many objects the policy selects on which the API
	// server refuses a write the controller must make, counted up to
	// 1000: the finalizer and its attached record (reason AttachRefused:
	// the object is not guarded, and a deletion does not wait for its
	// cleanup), or the progress record of its teardown (ProgressRefused:
	// its deletion stays held, and nothing on the object says why). Most
	// often the object's annotations leave no room under the API server's
	// 256 KiB total. Refreshed every --status-interval; the controller
	// tries each such object again every minute.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Refused int32 `json:"refused"`

	// refusedObjects lists refused objects, longest refused first, at most
	// 20 of them: which write was refused, why and since when.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	RefusedObjects []RefusedObject `json:"refusedObjects,omitempty"`
}

// RefusedObject is an object a policy selects on which the API server
// refuses a write the controller must make.
type RefusedObject struct {
	// object is the object.
	// +required
	Object ObjectReference `json:"object"`

	// reason is AttachRefused (the finalizer could not be added: the
	// object is not guarded) or ProgressRefused (the object is being
	// deleted and held; its progress cannot be recorded on it).
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
	Reason string `json:"reason"`

	// message is the API server's answer, such as
	// "metadata.annotations: Too long: may not be more than 262144 bytes".
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`

	// since is when the controller first met the refusal.
	// +required
	Since metav1.Time `json:"since"`
}

// GroupVersionKind names a kind.
type GroupVersionKind struct {
	// apiVersion is the group and version, such as apps/v1, or v1.
	// +required
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`

	// kind is the kind's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
}

// RetiredKey is a finalizer key an earlier version of a policy guarded
// objects of one kind with.
type RetiredKey struct {
	// finalizer is the key.
	// +required
	// +kubebuilder:validation:MaxLength=317
	Finalizer string `json:"finalizer"`

	GroupVersionKind `json:",inline"`
}

// StartedTeardown is a teardown a policy started on an object that has
// no room for its step record.
type StartedTeardown struct {
	// object is the object being torn down.
	// +required
	Object ObjectReference `json:"object"`

	// uid is the object's UID: an object of the same name created later
	// is another object.
	// +required
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid"`

	// finalizer is the key the teardown runs under.
	// +required
	// +kubebuilder:validation:MaxLength=317
	Finalizer string `json:"finalizer"`

	// since is when the controller recorded it.
	// +required
	Since metav1.Time `json:"since"`

	// lease and epoch are the leadership of the controller that recorded
	// it (the Lease's UID and its transitions), as on a step record.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Lease string `json:"lease,omitempty"`
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
}

// ObjectReference identifies an object in the cluster.
type ObjectReference struct {
	// apiVersion is the group and version of the object's kind.
	// +required
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`

	// kind is the object's kind.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// namespace is the object's namespace; empty for a cluster-scoped
	// object.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// name is the object's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BlockedObject is a terminating object whose teardown cannot progress.
type BlockedObject struct {
	// object is the blocked object.
	// +required
	Object ObjectReference `json:"object"`

	// step is the name of the step it is at; empty when the policy has no
	// steps.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Step string `json:"step,omitempty"`

	// reason says why: StepInProgress (the step is running and has not
	// finished yet), StepFailed (its last attempt failed; the message says
	// transient or failed), StepTimedOut (its timeout passed) or
	// DeadlineExceeded (the deadline passed with onDeadline: Block).
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
	Reason string `json:"reason"`

	// message says what is wrong, for a person.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// since is when that step started (when the object's deletion started
	// if no step is recorded).
	// +required
	Since metav1.Time `json:"since"`

	// diagnosis is the root cause of the wait, found by the controller when
	// the object has been terminating longer than its --diagnose-after
	// (default 5m): what `kubectl teardown explain` would name first.
	// +optional
	Diagnosis *Diagnosis `json:"diagnosis,omitempty"`
}

// Diagnosis is the root blocker behind a blocked object: why what its step
// waits on does not go.
type Diagnosis struct {
	// cause identifies the root cause, as `kubectl teardown explain` names
	// it (such as FinalizerOwnerGone, PodPastGracePeriod), or one the
	// controller names itself (WebhookFailing, OutsideNamespace, docs/api.md);
	// scripts and alerts match on it.
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_]*[A-Za-z0-9])?$`
	Cause string `json:"cause"`

	// catalog is the cause's row in the catalog of stuck terminations (A1
	// to F1, docs/cli.md), when it has one.
	// +optional
	// +kubebuilder:validation:MaxLength=8
	Catalog string `json:"catalog,omitempty"`

	// blocker is the object the root cause is about: what the step waits
	// on, or further down its chain; the blocked object itself when other
	// finalizers than the policy's hold it.
	// +optional
	Blocker *ObjectReference `json:"blocker,omitempty"`

	// message is the root cause in one line, for a person.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`

	// since is when the controller first found this cause for this object.
	// +required
	Since metav1.Time `json:"since"`
}

// StepFailure records the last failure of a blocked object's step.
type StepFailure struct {
	// object is the object being torn down.
	// +required
	Object ObjectReference `json:"object"`

	// step is the name of the step that failed.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Step string `json:"step,omitempty"`

	// reason is StepFailed (the step's last attempt failed) or StepTimedOut
	// (its timeout passed).
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
	Reason string `json:"reason"`

	// message says what failed, for a person.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// time is when the failure was last recorded on the object.
	// +required
	Time metav1.Time `json:"time"`
}
