/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

// ReadyCondition is the condition type that says whether a policy is in
// force: True when the controller watches every target and can act on it.
const ReadyCondition = "Ready"

// StalledCondition and ReconcilingCondition are the abnormal-true
// conditions kstatus reads (Flux's health checks, kubectl wait, cli-utils),
// beside Ready. Stalled is True, with Ready's reason and message, while the
// policy is refused: it stays so until its spec, RBAC or the cluster
// changes. Reconciling is True while a deleted policy finishes the teardowns
// it started (reason Deleting). Neither is present otherwise.
const (
	StalledCondition     = "Stalled"
	ReconcilingCondition = "Reconciling"
	// DeletingReason (Reconciling=True): the policy is deleted and finishes
	// the teardowns it started before it goes.
	DeletingReason = "Deleting"
)

// Reasons of the Ready condition.
const (
	// ServingReason (Ready=True): every target is watched and guarded.
	ServingReason = "Serving"
	// UnknownKindReason (Ready=False): a target's or step's apiVersion and
	// kind are not served by the API server.
	UnknownKindReason = "UnknownKind"
	// ClusterScopedKindReason (Ready=False): a TeardownPolicy targets, or
	// its steps reach, a cluster-scoped kind or another namespace, which
	// only a ClusterTeardownPolicy can.
	ClusterScopedKindReason = "ClusterScopedKind"
	// ForbiddenReason (Ready=False): RBAC does not allow what the policy
	// needs: the controller's (watching and patching a target kind, and
	// for a ClusterTeardownPolicy its steps' reads, deletes and Jobs), or a
	// TeardownPolicy's ServiceAccount's (patching its targets, its steps'
	// reads, deletes and Jobs), or the controller may not impersonate that
	// ServiceAccount.
	ForbiddenReason = "Forbidden"
	// NoServiceAccountReason (Ready=False): a TeardownPolicy names no
	// spec.serviceAccountName and the controller runs without a
	// --default-service-account.
	NoServiceAccountReason = "NoServiceAccount"
	// InvalidWebhookReason (Ready=False): a webhook step's destination is
	// refused: plain http without --webhook-allow-http, or a loopback,
	// link-local, cloud-metadata or unspecified address outside
	// --webhook-allowed-cidrs.
	InvalidWebhookReason = "InvalidWebhook"
	// InvalidSelectorReason (Ready=False): a label selector does not parse.
	InvalidSelectorReason = "InvalidSelector"
	// InvalidConditionReason (Ready=False): a wait step's CEL condition does
	// not compile or does not return a bool.
	InvalidConditionReason = "InvalidCondition"
	// InvalidJobTemplateReason (Ready=False): the API server refuses a job
	// step's Job (checked with a server-side dry run, also when the Job's
	// namespace does not exist), or a TeardownPolicy's Job template names a
	// ServiceAccount other than the one the policy acts as.
	InvalidJobTemplateReason = "InvalidJobTemplate"
	// FinalizerConflictReason (Ready=False): another policy already uses
	// the same finalizer key for overlapping targets.
	FinalizerConflictReason = "FinalizerConflict"
)

// Reasons of status.blockedObjects and status.recentFailures entries.
const (
	// StepInProgressReason (blockedObjects only): the step is running
	// normally and has not finished yet.
	StepInProgressReason = "StepInProgress"
	// StepFailedReason: the step's last attempt failed, definitively (a
	// webhook Failure, permanent 4xx or redirect, a failed Job) or
	// transiently (a connection error, a 5xx, an API error); the message
	// says which (failed: or transient:).
	StepFailedReason = "StepFailed"
	// StepTimedOutReason: the step's timeout passed, counted from when the
	// step started: a definitive failure, so its onFailure applies.
	StepTimedOutReason = "StepTimedOut"
	// DeadlineExceededReason (blockedObjects only): the policy's deadline
	// passed with onDeadline: Block; the steps keep running.
	DeadlineExceededReason = "DeadlineExceeded"
)

// Reasons of status.refusedObjects entries, the same as the Warning Events
// the controller puts on those objects (pkg/finalizer's ReasonAttachRefused
// and ReasonProgressRefused).
const (
	// AttachRefusedReason: the API server refused the patch that adds the
	// finalizer and its attached record: the object is not guarded, and a
	// deletion does not wait for its cleanup.
	AttachRefusedReason = "AttachRefused"
	// ProgressRefusedReason: the object is being deleted and held; the API
	// server refused the record of its teardown's progress.
	ProgressRefusedReason = "ProgressRefused"
)

// Reasons of the Events the controller's diagnosis puts on objects.
const (
	// TerminationBlockedReason (a Warning Event on a terminating object):
	// it has been terminating longer than --diagnose-after and the
	// controller found the root cause of what holds it; emitted again only
	// when the cause changes.
	TerminationBlockedReason = "TerminationBlocked"
)
