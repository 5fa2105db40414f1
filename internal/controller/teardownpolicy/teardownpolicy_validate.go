/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func notReady(reason, format string, args ...any) metav1.Condition {
	return metav1.Condition{Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// validate checks a policy version against the cluster before it is put in
// force. It returns ok, or the Ready condition that says what is wrong.
func (r *Reconciler) validate(ctx context.Context, pol *policy.Policy, polErr error, status *teardownv1alpha1.TeardownPolicyStatus) (metav1.Condition, bool) {
	var fieldErr *policy.FieldError
	if errors.As(polErr, &fieldErr) {
		return notReady(fieldErr.Reason, "%s", fieldErr.Error()), false
	} else if polErr != nil {
		return notReady(teardownv1alpha1.InvalidSelectorReason, "%s", polErr.Error()), false
	}
	if err := finalizer.ValidateName(pol.Key); err != nil {
		return notReady(teardownv1alpha1.FinalizerConflictReason, "%s", err.Error()), false
	}
	if err := policy.ReservedKey(pol.Ref, pol.Key); err != nil {
		r.yield(ctx, pol, status)
		return notReady(teardownv1alpha1.FinalizerConflictReason, "%s", err.Error()), false
	}
	needs, cond, ok := r.needs(pol)
	if !ok {
		return cond, false
	}
	if cond, ok, identityDenied := r.checkCluster(ctx, pol, needs); !ok {
		if identityDenied {
			// The ServiceAccount the policy acts as may no longer do what it
			// needs: an earlier version must not go on guarding (with the
			// controller's rights) what its author's identity can no longer
			// touch. Teardowns under way wait, unreleased, until it may.
			r.Index.Delete(pol.Ref)
		}
		return cond, false
	}
	if cond, ok := r.checkOwner(ctx, pol, status); !ok {
		// Another policy owns the key now: this one must stop attaching
		// and releasing it, even if an earlier version of it was served,
		// and finishes only the teardowns it started.
		r.yield(ctx, pol, status)
		return cond, false
	}
	if policy.InForce(status, pol.Key) {
		// Already in force with this key (its status says so): the check
		// is whether the key was someone else's before this policy took
		// it. A key a tenant writes since on an object the policy does not
		// select is no such evidence, and must not unserve the policy and
		// stall the teardowns it started (the policy never touches that
		// object).
		return metav1.Condition{}, true
	}
	return r.checkForeignKey(ctx, pol)
}

// needs lists every permission pol needs, from the controller or from the
// ServiceAccount a TeardownPolicy acts as, and refuses what a policy may
// not ask for at all: a kind the API server does not serve, and for a
// TeardownPolicy anything outside its namespace.
func (r *Reconciler) needs(pol *policy.Policy) ([]access, metav1.Condition, bool) {
	sa := ""
	if pol.Ref.Kind == policy.KindNamespaced {
		var err error
		if sa, err = r.Runner.Identities.ServiceAccount(pol); err != nil {
			return nil, notReady(teardownv1alpha1.NoServiceAccountReason, "%s", err), false
		}
	}
	// Steps act as the policy's ServiceAccount when it has one, else as
	// the controller.
	stepsActor := actor{serviceAccount: sa, namespace: pol.Ref.Namespace}
	var needs []access
	if sa != "" {
		serviceAccounts := corev1.SchemeGroupVersion.WithResource("serviceaccounts")
		needs = append(needs, access{what: "spec.serviceAccountName", verb: "impersonate", resource: serviceAccounts, namespace: pol.Ref.Namespace, name: sa})
	}
	mapper := r.Manager.GetRESTMapper()
	for i, t := range pol.Targets {
		mapping, err := mapper.RESTMapping(t.GVK.GroupKind(), t.GVK.Version)
		if err != nil {
			return nil, notReady(teardownv1alpha1.UnknownKindReason, "spec.targets[%d]: %s is not served by the API server: %s", i, t.GVK, err), false
		}
		clusterScoped := mapping.Scope.Name() == meta.RESTScopeNameRoot
		if clusterScoped && pol.Ref.Kind == policy.KindNamespaced {
			return nil, notReady(teardownv1alpha1.ClusterScopedKindReason, "spec.targets[%d]: %s is cluster-scoped; only a ClusterTeardownPolicy can guard it", i, t.GVK.Kind), false
		}
		// One metadata-only informer per kind serves every policy, so
		// watching is cluster-wide even for a namespaced policy.
		what := fmt.Sprintf("spec.targets[%d]", i)
		needs = append(needs, access{what: what, verb: "list", resource: mapping.Resource}, access{what: what, verb: "watch", resource: mapping.Resource},
			access{what: what, verb: "patch", resource: mapping.Resource, namespace: pol.Ref.Namespace})
		if sa != "" {
			// A policy guards only what its author's identity may change.
			needs = append(needs, access{who: stepsActor, what: what, verb: "patch", resource: mapping.Resource, namespace: pol.Ref.Namespace})
		}
	}
	for i, s := range pol.Steps {
		what := fmt.Sprintf("spec.steps[%d] (%s)", i, s.Name)
		var resources []teardownv1alpha1.ResourceSelector
		verbs := []string{"list"}
		switch {
		case s.Delete != nil:
			resources, verbs = s.Delete.Resources, []string{"list", "delete"}
		case s.Wait != nil:
			resources = s.Wait.Resources
		case s.Job != nil:
			ns := jobNamespace(pol, s.Job)
			if pol.Ref.Kind == policy.KindNamespaced {
				if ns != pol.Ref.Namespace {
					return nil, notReady(teardownv1alpha1.ClusterScopedKindReason, "%s: job.namespace %s: a TeardownPolicy's Jobs run in its own namespace", what, ns), false
				}
				if tsa := s.Job.Template.Spec.Template.Spec.ServiceAccountName; tsa != "" && tsa != sa {
					return nil, notReady(teardownv1alpha1.InvalidJobTemplateReason, "%s: the Job's pods would run as ServiceAccount %s; a TeardownPolicy's Jobs run as its own ServiceAccount %s", what, tsa, sa), false
				}
			}
			jobs := batchv1.SchemeGroupVersion.WithResource("jobs")
			for _, verb := range []string{"get", "create", "delete"} {
				needs = append(needs, access{who: stepsActor, what: what, verb: verb, resource: jobs, namespace: ns})
			}
		case s.Unused != nil:
			// The controller's index reads every pod and binding; a
			// TeardownPolicy's step tells its author about the pods of its
			// namespace, so its ServiceAccount must be allowed to list them.
			pods := corev1.SchemeGroupVersion.WithResource("pods")
			for _, res := range []schema.GroupVersionResource{pods, rbacv1.SchemeGroupVersion.WithResource("rolebindings"), rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")} {
				needs = append(needs, access{what: what, verb: "list", resource: res}, access{what: what, verb: "watch", resource: res})
			}
			if sa != "" {
				needs = append(needs, access{who: stepsActor, what: what, verb: "list", resource: pods, namespace: pol.Ref.Namespace})
			}
		case s.Webhook != nil:
			if svc := s.Webhook.Service; svc != nil && pol.Ref.Kind == policy.KindNamespaced && svc.Namespace != pol.Ref.Namespace {
				return nil, notReady(teardownv1alpha1.ClusterScopedKindReason, "%s: webhook.service in namespace %s: a TeardownPolicy calls Services of its own namespace only", what, svc.Namespace), false
			}
			// A TeardownPolicy's URL host is read as the cluster's DNS
			// reads it (steps.ClassifyHost); the same check is made again
			// before every call.
			if err := r.Runner.HTTP.CheckDestination(s.Webhook, steps.WebhookNamespace(pol)); err != nil {
				reason := teardownv1alpha1.InvalidWebhookReason
				if steps.IsNamespaceRefusal(err) {
					reason = teardownv1alpha1.ClusterScopedKindReason
				}
				return nil, notReady(reason, "%s: %s", what, err), false
			}
			if ref := s.Webhook.SigningSecretRef; ref != nil && sa != "" {
				secrets := corev1.SchemeGroupVersion.WithResource("secrets")
				needs = append(needs, access{who: stepsActor, what: what + " signingSecretRef", verb: "get", resource: secrets, namespace: pol.Ref.Namespace, name: ref.Name})
			}
		}
		for _, res := range resources {
			gv, err := schema.ParseGroupVersion(res.APIVersion)
			var mapping *meta.RESTMapping
			if err == nil {
				mapping, err = mapper.RESTMapping(gv.WithKind(res.Kind).GroupKind(), gv.Version)
			}
			if err != nil {
				return nil, notReady(teardownv1alpha1.UnknownKindReason, "%s: %s %s is not served by the API server: %s", what, res.APIVersion, res.Kind, err), false
			}
			if pol.Ref.Kind == policy.KindNamespaced && mapping.Scope.Name() == meta.RESTScopeNameRoot {
				return nil, notReady(teardownv1alpha1.ClusterScopedKindReason, "%s: %s is cluster-scoped; a TeardownPolicy's steps reach only namespaced kinds in its own namespace", what, res.Kind), false
			}
			for _, verb := range verbs {
				needs = append(needs, access{who: stepsActor, what: what, verb: verb, resource: mapping.Resource, namespace: pol.Ref.Namespace})
			}
		}
	}
	return needs, metav1.Condition{}, true
}

// jobNamespace is where a job step's Jobs run: its own namespace, else the
// policy's (a ClusterTeardownPolicy's job step must name one; the API
// refuses it otherwise).
func jobNamespace(pol *policy.Policy, j *teardownv1alpha1.JobAction) string {
	if j.Namespace != "" {
		return j.Namespace
	}
	return pol.Ref.Namespace
}

func scope(pol *policy.Policy) []client.ListOption {
	if pol.Ref.Namespace == "" {
		return nil
	}
	return []client.ListOption{client.InNamespace(pol.Ref.Namespace)}
}
