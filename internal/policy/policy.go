/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package policy turns TeardownPolicy and ClusterTeardownPolicy objects into
// what the controllers act on: the finalizer key in effect, parsed selectors
// and compiled wait conditions, and an index from target kinds to policies.
package policy

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/pkg/finalizer"
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

// Target is a parsed spec target.
type Target struct {
	GVK               schema.GroupVersionKind
	Selector          labels.Selector
	NamespaceSelector labels.Selector // nil: every namespace in scope
}

// Policy is a policy as the controllers use it.
type Policy struct {
	Ref        Ref
	UID        types.UID
	Generation int64
	Key        string
	Attach     teardownv1alpha1.AttachMode
	Targets    []Target
	Steps      []teardownv1alpha1.Step
	// Conditions holds the compiled condition of each wait step, by step index.
	Conditions map[int]cel.Program
	Deadline   time.Duration
	OnDeadline teardownv1alpha1.DeadlineAction
	Deleting   bool
	// Fin runs the policy's finalizer; set by the policy controller.
	Fin *finalizer.Finalizers
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

// FromObject builds a Policy from either policy kind. Errors name the field
// at fault and are meant for the policy's status.
func FromObject(obj client.Object) (*Policy, error) {
	var spec *teardownv1alpha1.TeardownPolicySpec
	ref := Ref{Name: obj.GetName()}
	switch p := obj.(type) {
	case *teardownv1alpha1.TeardownPolicy:
		spec, ref.Kind, ref.Namespace = &p.Spec, KindNamespaced, p.Namespace
	case *teardownv1alpha1.ClusterTeardownPolicy:
		spec, ref.Kind = &p.Spec, KindCluster
	default:
		return nil, fmt.Errorf("not a policy: %T", obj)
	}
	pol := &Policy{
		Ref: ref, UID: obj.GetUID(), Generation: obj.GetGeneration(),
		Key: spec.Finalizer, Attach: spec.Attach, Steps: spec.Steps,
		OnDeadline: spec.OnDeadline, Deleting: obj.GetDeletionTimestamp() != nil,
	}
	if pol.Key == "" {
		pol.Key = DefaultKey(ref)
	}
	if pol.Attach == "" {
		pol.Attach = teardownv1alpha1.AttachAutomatic
	}
	if pol.OnDeadline == "" {
		pol.OnDeadline = teardownv1alpha1.DeadlineBlock
	}
	if spec.Deadline != nil {
		pol.Deadline = spec.Deadline.Duration
	}
	for i, step := range spec.Steps {
		if step.Wait == nil {
			continue
		}
		expr := step.Wait.Condition
		if expr == "" {
			expr = "size(objects) == 0"
		}
		prg, err := CompileCondition(expr)
		if err != nil {
			return nil, &FieldError{Reason: teardownv1alpha1.InvalidConditionReason, Field: fmt.Sprintf("spec.steps[%d].wait.condition", i), Err: err}
		}
		if pol.Conditions == nil {
			pol.Conditions = map[int]cel.Program{}
		}
		pol.Conditions[i] = prg
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
		target := Target{GVK: gv.WithKind(t.Kind), Selector: sel}
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
	return slices.ContainsFunc(p.Targets, func(t Target) bool { return t.GVK == gvk })
}

// Index maps target kinds to the policies in force. It is shared by the
// policy controller, which fills it, and the target controller, which reads
// it on every event.
type Index struct {
	mu       sync.RWMutex
	policies map[Ref]*Policy
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{policies: map[Ref]*Policy{}} }

// Set adds or replaces a policy.
func (x *Index) Set(p *Policy) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.policies[p.Ref] = p
}

// Delete removes a policy.
func (x *Index) Delete(ref Ref) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.policies, ref)
}

// Get returns a policy by reference.
func (x *Index) Get(ref Ref) (*Policy, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	p, ok := x.policies[ref]
	return p, ok
}

// All returns every policy in the index.
func (x *Index) All() []*Policy {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]*Policy, 0, len(x.policies))
	for _, p := range x.policies {
		out = append(out, p)
	}
	return out
}

// ForKind returns the policies with a target of kind gvk, ordered by
// reference so that their cleanups are attempted in a stable order.
func (x *Index) ForKind(gvk schema.GroupVersionKind) []*Policy {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []*Policy
	for _, p := range x.policies {
		if p.TargetsKind(gvk) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref.String() < out[j].Ref.String() })
	return out
}

// KeyOwner returns another policy in force that uses key for a kind p also
// targets, if any: two policies sharing a key on the same objects would
// release each other's guard.
func (x *Index) KeyOwner(p *Policy) (*Policy, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, other := range x.policies {
		if other.Ref == p.Ref || other.Key != p.Key {
			continue
		}
		if p.Ref.Namespace != "" && other.Ref.Namespace != "" && p.Ref.Namespace != other.Ref.Namespace {
			continue // two namespaced policies never select the same objects
		}
		for _, t := range p.Targets {
			if other.TargetsKind(t.GVK) {
				return other, true
			}
		}
	}
	return nil, false
}
