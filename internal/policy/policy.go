/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package policy turns TeardownPolicy and ClusterTeardownPolicy objects into
// what the controllers act on: the finalizer key in effect, parsed selectors
// and compiled wait conditions, and an index from target kinds to policies.
package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// Kind names which of the two policy kinds a policy is.
type Kind string

const (
	KindNamespaced Kind = "TeardownPolicy"
	KindCluster    Kind = "ClusterTeardownPolicy"
)

// Ref identifies a policy.
type Ref struct {
	Kind      Kind
	Namespace string // empty for a ClusterTeardownPolicy
	Name      string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return string(r.Kind) + "/" + r.Name
	}
	return string(r.Kind) + " " + r.Namespace + "/" + r.Name
}

// Selector is a parsed spec.targets entry: which objects of which kind the
// policy guards (the API keeps the name targets; "target" alone named five
// things in the code).
type Selector struct {
	GVK               schema.GroupVersionKind
	Selector          labels.Selector
	NamespaceSelector labels.Selector // nil: every namespace in scope
}

// Step is a parsed cleanup step.
type Step struct {
	teardownv1alpha1.Step
	// Condition is a wait step's compiled condition; nil for other kinds.
	Condition cel.Program
	// Reads is what the condition reads of each object the step selects
	// (ConditionReads); nil reads nothing but how many there are.
	Reads *Fields
}

// Policy is one version of a policy as the controllers use it: parsed once
// by FromObject and never changed afterwards, so that every reader of a
// version sees the same thing.
type Policy struct {
	Ref        Ref
	UID        types.UID
	Generation int64
	// Created orders policies that share a key: the oldest owns it.
	Created time.Time
	Key     string
	Attach  teardownv1alpha1.AttachMode
	Targets []Selector
	Steps   []Step
	// Fingerprint identifies the steps of this version: a step's recorded
	// progress is trusted only under the same fingerprint.
	Fingerprint string
	Deadline    time.Duration
	OnDeadline  teardownv1alpha1.DeadlineAction
	// OnPolicyDeletion says what deleting the policy does to teardowns in
	// progress.
	OnPolicyDeletion teardownv1alpha1.PolicyDeletionAction
	// ServiceAccountName is spec.serviceAccountName: the ServiceAccount a
	// TeardownPolicy's steps act as (steps.Identities applies the default).
	ServiceAccountName string
	// Deleting is set when the policy object carries a deletionTimestamp.
	Deleting bool
}

// DefaultKey is the finalizer key of a policy that does not name one:
// teardown.dev/<name> for a ClusterTeardownPolicy, <namespace>.teardown.dev/<name>
// for a TeardownPolicy, so that namesakes in two namespaces never share a key.
func DefaultKey(ref Ref) string {
	if ref.Namespace == "" {
		return teardownv1alpha1.GroupVersion.Group + "/" + ref.Name
	}
	return ref.Namespace + "." + teardownv1alpha1.GroupVersion.Group + "/" + ref.Name
}

// RefOf returns a policy object's reference.
func RefOf(obj teardownv1alpha1.PolicyObject) Ref {
	if _, ok := obj.(*teardownv1alpha1.ClusterTeardownPolicy); ok {
		return Ref{Kind: KindCluster, Name: obj.GetName()}
	}
	return Ref{Kind: KindNamespaced, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// refAndSpec returns the reference and spec of either policy kind; false for
// anything else.
func refAndSpec(obj client.Object) (Ref, *teardownv1alpha1.TeardownPolicySpec, bool) {
	p, ok := obj.(teardownv1alpha1.PolicyObject)
	if !ok {
		return Ref{}, nil, false
	}
	return RefOf(p), p.PolicySpec(), true
}

// DefaultCondition is a wait step's condition when it names none (the
// API's default, +kubebuilder:default on WaitAction.Condition, says the
// same for objects written since).
const DefaultCondition = "size(objects) == 0"

// FromObject builds a Policy from either policy kind. Errors name the field
// at fault and are meant for the policy's status.
func FromObject(obj client.Object) (*Policy, error) {
	ref, spec, ok := refAndSpec(obj)
	if !ok {
		return nil, fmt.Errorf("not a policy: %T", obj)
	}
	pol := &Policy{
		Ref: ref, UID: obj.GetUID(), Generation: obj.GetGeneration(),
		Created: obj.GetCreationTimestamp().Time,
		Key:     spec.Finalizer, Attach: spec.Attach,
		OnDeadline: spec.OnDeadline, Deleting: obj.GetDeletionTimestamp() != nil,
		Fingerprint: Fingerprint(spec.Steps), ServiceAccountName: spec.ServiceAccountName,
	}
	if pol.Key == "" {
		pol.Key = DefaultKey(ref)
	}
	if pol.Attach == "" {
		pol.Attach = teardownv1alpha1.AttachAutomatic
	}
	pol.OnPolicyDeletion = spec.OnPolicyDeletion
	if pol.OnPolicyDeletion == "" {
		pol.OnPolicyDeletion = teardownv1alpha1.PolicyDeletionFinish
	}
	if pol.OnDeadline == "" {
		pol.OnDeadline = teardownv1alpha1.DeadlineBlock
	}
	if spec.Deadline != nil {
		pol.Deadline = spec.Deadline.Duration
	}
	for i, step := range spec.Steps {
		parsed := Step{Step: *step.DeepCopy()}
		if step.Wait != nil {
			expr := step.Wait.Condition
			if expr == "" {
				expr = DefaultCondition
			}
			prg, err := CompileCondition(expr)
			if err != nil {
				return nil, &FieldError{Reason: teardownv1alpha1.InvalidConditionReason, Field: fmt.Sprintf("spec.steps[%d].wait.condition", i), Err: err}
			}
			parsed.Condition = prg
			if parsed.Reads, err = ConditionReads(expr); err != nil {
				return nil, &FieldError{Reason: teardownv1alpha1.InvalidConditionReason, Field: fmt.Sprintf("spec.steps[%d].wait.condition", i), Err: err}
			}
		}
		pol.Steps = append(pol.Steps, parsed)
	}
	for i, t := range spec.Targets {
		gv, err := schema.ParseGroupVersion(t.APIVersion)
		if err != nil {
			return nil, &FieldError{Reason: teardownv1alpha1.UnknownKindReason, Field: fmt.Sprintf("spec.targets[%d].apiVersion", i), Err: err}
		}
		sel, err := parseSelector(t.Selector)
		if err != nil {
			return nil, &FieldError{Reason: teardownv1alpha1.InvalidSelectorReason, Field: fmt.Sprintf("spec.targets[%d].selector", i), Err: err}
		}
		target := Selector{GVK: gv.WithKind(t.Kind), Selector: sel}
		if t.NamespaceSelector != nil {
			if target.NamespaceSelector, err = metav1.LabelSelectorAsSelector(t.NamespaceSelector); err != nil {
				return nil, &FieldError{Reason: teardownv1alpha1.InvalidSelectorReason, Field: fmt.Sprintf("spec.targets[%d].namespaceSelector", i), Err: err}
			}
		}
		pol.Targets = append(pol.Targets, target)
	}
	return pol, nil
}

// parseSelector treats a missing selector as "everything", as the API does.
func parseSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// FieldError is a policy problem to report in its Ready condition.
type FieldError struct {
	Reason string
	Field  string
	Err    error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Matches reports whether obj of kind gvk is one of the policy's targets.
// nsLabels are the labels of obj's namespace (nil for cluster-scoped objects).
func (p *Policy) Matches(gvk schema.GroupVersionKind, obj metav1.Object, nsLabels labels.Set) bool {
	if p.Ref.Kind == KindNamespaced && obj.GetNamespace() != p.Ref.Namespace {
		return false
	}
	for _, t := range p.Targets {
		if t.GVK != gvk || !t.Selector.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		if t.NamespaceSelector != nil && (obj.GetNamespace() == "" || !t.NamespaceSelector.Matches(nsLabels)) {
			continue
		}
		return true
	}
	return false
}

// TargetsKind reports whether the policy has a target of kind gvk.
func (p *Policy) TargetsKind(gvk schema.GroupVersionKind) bool {
	return slices.ContainsFunc(p.Targets, func(t Selector) bool { return t.GVK == gvk })
}

// Fingerprint hashes a list of steps: any edit, reorder, insertion or removal
// gives another value.
func Fingerprint(steps []teardownv1alpha1.Step) string {
	data, err := json.Marshal(steps)
	if err != nil {
		// Steps are plain API types; Marshal cannot fail on them. Should it,
		// no recorded progress matches "" and cleanups start from the first
		// step, which is the safe direction.
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
