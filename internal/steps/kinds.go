/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// Action is a step's kind, named as its field in the API's Step.
type Action string

// The step kinds.
const (
	ActionWebhook Action = "webhook"
	ActionJob     Action = "job"
	ActionDelete  Action = "delete"
	ActionWait    Action = "wait"
	ActionUnused  Action = "unused"
)

// kind is everything the controller knows about one step kind: which field
// of a Step it is, how it runs, and what it needs before a policy that uses
// it may be served. Adding a step kind is one entry here (and its file),
// its field in the API type, and its docs; the policy controller asks
// Needs and Prepare and never looks at the kind itself.
type kind struct {
	action Action
	is     func(teardownv1alpha1.Step) bool
	run    func(r *Runner, ctx context.Context, pol *policy.Policy, key string, i int, t Object) outcome
	// needs lists the permissions the step needs, or refuses a step no
	// policy of this scope may have.
	needs func(r *Runner, env NeedsEnv, pol *policy.Policy, s policy.Step) ([]Access, *Refusal)
	// usesIndex: the step reads the in-use index, which must have synced
	// before its first cleanup.
	usesIndex bool
}

var kinds = []kind{
	{
		action: ActionWebhook, is: func(s teardownv1alpha1.Step) bool { return s.Webhook != nil },
		run: func(r *Runner, ctx context.Context, pol *policy.Policy, key string, i int, t Object) outcome {
			return r.webhook(ctx, pol, key, pol.Steps[i].Step, t)
		},
		needs: webhookNeeds,
	},
	{
		action: ActionJob, is: func(s teardownv1alpha1.Step) bool { return s.Job != nil },
		run: func(r *Runner, ctx context.Context, pol *policy.Policy, _ string, i int, t Object) outcome {
			return r.job(ctx, pol, pol.Steps[i].Step, t)
		},
		needs: jobNeeds,
	},
	{
		action: ActionDelete, is: func(s teardownv1alpha1.Step) bool { return s.Delete != nil },
		run: func(r *Runner, ctx context.Context, pol *policy.Policy, key string, i int, t Object) outcome {
			return r.delete(ctx, pol, key, i, pol.Steps[i].Delete, t)
		},
		needs: func(_ *Runner, env NeedsEnv, pol *policy.Policy, s policy.Step) ([]Access, *Refusal) {
			return resourceNeeds(env, pol, s.Delete.Resources, "list", "delete")
		},
	},
	{
		action: ActionWait, is: func(s teardownv1alpha1.Step) bool { return s.Wait != nil },
		run: func(r *Runner, ctx context.Context, pol *policy.Policy, key string, i int, t Object) outcome {
			return r.wait(ctx, pol, key, i, pol.Steps[i].Condition, pol.Steps[i].Wait, t)
		},
		needs: func(_ *Runner, env NeedsEnv, pol *policy.Policy, s policy.Step) ([]Access, *Refusal) {
			return resourceNeeds(env, pol, s.Wait.Resources, "list")
		},
	},
	{
		action: ActionUnused, is: func(s teardownv1alpha1.Step) bool { return s.Unused != nil },
		run: func(r *Runner, ctx context.Context, pol *policy.Policy, key string, i int, t Object) outcome {
			return r.unused(ctx, pol, key, i, t)
		},
		needs: unusedNeeds, usesIndex: true,
	},
}

func kindOf(s teardownv1alpha1.Step) *kind {
	for i := range kinds {
		if kinds[i].is(s) {
			return &kinds[i]
		}
	}
	return nil
}

// ActionOf names a step's kind; "" for a step with no action.
func ActionOf(s teardownv1alpha1.Step) Action {
	if k := kindOf(s); k != nil {
		return k.action
	}
	return ""
}

// Access is one permission a step needs.
type Access struct {
	// AsSteps: the identity steps act as needs it (a TeardownPolicy's
	// ServiceAccount, else the controller); false: the controller itself.
	AsSteps bool
	// What is appended to the step's field path in messages.
	What      string
	Verb      string
	Resource  schema.GroupVersionResource
	Namespace string // empty: cluster-wide
	Name      string // empty: any
}

// Refusal says why a step can never be served as written: the Ready
// condition's reason and message.
type Refusal struct {
	Reason, Message string
}

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// NeedsEnv is what Needs reads besides the policy: the API server's kinds,
// and the ServiceAccount a TeardownPolicy's steps act as ("" when the
// controller acts itself).
type NeedsEnv struct {
	Mapper         meta.RESTMapper
	ServiceAccount string
}

// Needs lists the permissions step i of pol needs, or refuses it: a kind
// the API server does not serve, and for a TeardownPolicy anything outside
// its namespace.
func (r *Runner) Needs(env NeedsEnv, pol *policy.Policy, i int) ([]Access, *Refusal) {
	s := pol.Steps[i]
	k := kindOf(s.Step)
	if k == nil {
		return nil, refuse(teardownv1alpha1.InvalidSelectorReason, "step %s has no action", s.Name)
	}
	return k.needs(r, env, pol, s)
}

// Prepare readies what pol's steps read before any of its cleanups runs:
// the in-use index starts (and syncs) when a step reads it.
func (r *Runner) Prepare(pol *policy.Policy) {
	for _, s := range pol.Steps {
		if k := kindOf(s.Step); k != nil && k.usesIndex && r.Uses != nil {
			r.Uses.Activate()
		}
	}
}

func (r *Runner) runStep(ctx context.Context, pol *policy.Policy, key string, i int, t Object) outcome {
	k := kindOf(pol.Steps[i].Step)
	if k == nil {
		return transient(errors.New("step has no action"))
	}
	return k.run(r, ctx, pol, key, i, t)
}

func webhookNeeds(r *Runner, env NeedsEnv, pol *policy.Policy, s policy.Step) ([]Access, *Refusal) {
	if svc := s.Webhook.Service; svc != nil && pol.Ref.Kind == policy.KindNamespaced && svc.Namespace != pol.Ref.Namespace {
		return nil, refuse(teardownv1alpha1.ClusterScopedKindReason, "webhook.service in namespace %s: a TeardownPolicy calls Services of its own namespace only", svc.Namespace)
	}
	// A TeardownPolicy's URL host is read as the cluster's DNS reads it
	// (ClassifyHost); the same check is made again before every call.
	if err := r.HTTP.CheckDestination(s.Webhook, WebhookNamespace(pol)); err != nil {
		reason := teardownv1alpha1.InvalidWebhookReason
		if IsNamespaceRefusal(err) {
			reason = teardownv1alpha1.ClusterScopedKindReason
		}
		return nil, refuse(reason, "%s", err)
	}
	if ref := s.Webhook.SigningSecretRef; ref != nil && env.ServiceAccount != "" {
		secrets := corev1.SchemeGroupVersion.WithResource("secrets")
		return []Access{{AsSteps: true, What: " signingSecretRef", Verb: "get", Resource: secrets, Namespace: pol.Ref.Namespace, Name: ref.Name}}, nil
	}
	return nil, nil
}

func jobNeeds(_ *Runner, env NeedsEnv, pol *policy.Policy, s policy.Step) ([]Access, *Refusal) {
	ns, err := JobNamespace(pol, s.Job)
	if err != nil {
		reason := teardownv1alpha1.ClusterScopedKindReason // a TeardownPolicy's Job elsewhere
		if pol.Ref.Kind == policy.KindCluster {
			reason = teardownv1alpha1.InvalidJobTemplateReason // no namespace (the API refuses it too)
		}
		return nil, refuse(reason, "%s", err)
	}
	if pol.Ref.Kind == policy.KindNamespaced {
		if tsa := s.Job.Template.Spec.Template.Spec.ServiceAccountName; tsa != "" && tsa != env.ServiceAccount {
			return nil, refuse(teardownv1alpha1.InvalidJobTemplateReason, "the Job's pods would run as ServiceAccount %s; a TeardownPolicy's Jobs run as its own ServiceAccount %s", tsa, env.ServiceAccount)
		}
	}
	jobs := batchv1.SchemeGroupVersion.WithResource("jobs")
	var out []Access
	for _, verb := range []string{"get", "create", "delete"} {
		out = append(out, Access{AsSteps: true, Verb: verb, Resource: jobs, Namespace: ns})
	}
	return out, nil
}

// unusedNeeds: the controller's index reads every pod and binding; a
// TeardownPolicy's step tells its author about the pods of its namespace,
// so its ServiceAccount must be allowed to list them.
func unusedNeeds(_ *Runner, env NeedsEnv, pol *policy.Policy, _ policy.Step) ([]Access, *Refusal) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	var out []Access
	for _, res := range []schema.GroupVersionResource{pods, rbacv1.SchemeGroupVersion.WithResource("rolebindings"), rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")} {
		out = append(out, Access{Verb: "list", Resource: res}, Access{Verb: "watch", Resource: res})
	}
	if env.ServiceAccount != "" {
		out = append(out, Access{AsSteps: true, Verb: "list", Resource: pods, Namespace: pol.Ref.Namespace})
	}
	return out, nil
}

// resourceNeeds is what the delete and wait steps need on the kinds they
// select: each served by the API server, namespaced for a TeardownPolicy;
// a namespaceSelector only on a ClusterTeardownPolicy and a namespaced kind,
// with the right to list namespaces when it has labels.
func resourceNeeds(env NeedsEnv, pol *policy.Policy, resources []teardownv1alpha1.ResourceSelector, verbs ...string) ([]Access, *Refusal) {
	var out []Access
	for _, res := range resources {
		if res.NamespaceSelector != nil && pol.Ref.Kind == policy.KindNamespaced {
			return nil, refuse(teardownv1alpha1.ClusterScopedKindReason, "namespaceSelector of %s: a TeardownPolicy's steps look only in its own namespace", res.Kind)
		}
		gv, err := schema.ParseGroupVersion(res.APIVersion)
		var mapping *meta.RESTMapping
		if err == nil {
			mapping, err = env.Mapper.RESTMapping(gv.WithKind(res.Kind).GroupKind(), gv.Version)
		}
		if err != nil {
			return nil, refuse(teardownv1alpha1.UnknownKindReason, "%s %s is not served by the API server: %s", res.APIVersion, res.Kind, err)
		}
		if pol.Ref.Kind == policy.KindNamespaced && mapping.Scope.Name() == meta.RESTScopeNameRoot {
			return nil, refuse(teardownv1alpha1.ClusterScopedKindReason, "%s is cluster-scoped; a TeardownPolicy's steps reach only namespaced kinds in its own namespace", res.Kind)
		}
		if res.NamespaceSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(res.NamespaceSelector)
			switch {
			case mapping.Scope.Name() == meta.RESTScopeNameRoot:
				return nil, refuse(teardownv1alpha1.InvalidSelectorReason, "namespaceSelector of %s: %s is cluster-scoped, it is in no namespace", res.Kind, res.Kind)
			case err != nil:
				return nil, refuse(teardownv1alpha1.InvalidSelectorReason, "namespaceSelector of %s: %s", res.Kind, err)
			case !sel.Empty():
				out = append(out, Access{AsSteps: true, What: " namespaceSelector", Verb: "list", Resource: corev1.SchemeGroupVersion.WithResource("namespaces")})
			}
		}
		for _, verb := range verbs {
			out = append(out, Access{AsSteps: true, Verb: verb, Resource: mapping.Resource, Namespace: pol.Ref.Namespace})
		}
	}
	return out, nil
}
