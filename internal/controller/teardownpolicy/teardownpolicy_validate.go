/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func notReady(reason, format string, args ...any) metav1.Condition {
	return metav1.Condition{Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// validate checks a policy version against the cluster before it is put in
// force. It returns ok, or the Ready condition that says what is wrong. A
// deleted policy of a namespace being deleted, in the version its status
// records as served (recorded), is ok without the rights the namespace's
// deletion took from its ServiceAccount (finishesItsNamespace): then the
// condition returned with ok says which. Another version (a spec edited
// since) gets no such leave: the recorded one stays in force instead
// (keepServed).
func (r *Reconciler) validate(ctx context.Context, pol *policy.Policy, polErr error, status *teardownv1alpha1.TeardownPolicyStatus, recorded bool) (metav1.Condition, bool) {
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
	var unchecked metav1.Condition
	if cond, ok, identityDenied := r.checkCluster(ctx, pol, needs); !ok {
		if !identityDenied {
			return cond, false
		}
		finishing, err := r.finishesItsNamespace(ctx, pol)
		if err != nil {
			return notReady(teardownv1alpha1.ForbiddenReason, "%s", err), false
		}
		if !finishing {
			// The ServiceAccount the policy acts as may no longer do what it
			// needs: an earlier version must not go on guarding (with the
			// controller's rights) what its author's identity can no longer
			// touch. Teardowns under way wait, unreleased, until it may.
			r.Index.Delete(pol.Ref)
			return cond, false
		}
		if !recorded {
			return cond, false
		}
		unchecked = cond
	}
	if cond, ok := r.checkOwner(ctx, pol, status); !ok {
		// Another policy owns the key now: this one must stop attaching
		// and releasing it, even if an earlier version of it was served,
		// and finishes only the teardowns it started.
		r.yield(ctx, pol, status)
		return cond, false
	}
	// A key its status records as served (whether it is Ready now or
	// yielded it for a while) is not checked for being someone else's
	// again: a key a tenant writes since on an object the policy does not
	// select is no such evidence, and must not unserve the policy and stall
	// the teardowns it started (the policy never touches that object), nor
	// keep it from serving again once a rival it yielded to goes.
	if status.Finalizer == "" || status.Finalizer != pol.Key {
		if cond, ok := r.checkForeignKey(ctx, pol); !ok {
			return cond, false
		}
	}
	return unchecked, true
}

// finishesItsNamespace tells whether pol is a deleted TeardownPolicy whose
// namespace is being deleted (read from the API server): such a policy is
// kept in force, as deleting, even when its ServiceAccount lost rights it
// needs. The namespace's deletion deletes its RoleBindings along with
// everything else, in no set order, and a Terminating namespace refuses a
// new one: checking those rights again would stall, for good, every teardown
// the namespace owes (the namespace stuck Terminating). Nothing is gained
// with rights the ServiceAccount lost: a deleting policy attaches nothing,
// its steps still act as the ServiceAccount (the API server refuses what it
// may no longer do, and the step waits, saying so), and what the controller
// writes with its own identity on an object carrying the key is what it
// writes for any policy.
func (r *Reconciler) finishesItsNamespace(ctx context.Context, pol *policy.Policy) (bool, error) {
	if !pol.Deleting || pol.Ref.Kind != policy.KindNamespaced {
		return false, nil
	}
	return guarded.NamespaceTerminating(ctx, r.reader, pol.Ref.Namespace)
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
	env := steps.NeedsEnv{Mapper: mapper, ServiceAccount: sa}
	for i, s := range pol.Steps {
		what := fmt.Sprintf("spec.steps[%d] (%s)", i, s.Name)
		stepNeeds, refusal := r.Runner.Needs(env, pol, i)
		if refusal != nil {
			return nil, notReady(refusal.Reason, "%s: %s", what, refusal.Message), false
		}
		for _, a := range stepNeeds {
			who := actor{}
			if a.AsSteps {
				who = stepsActor
			}
			needs = append(needs, access{who: who, what: what + a.What, verb: a.Verb, resource: a.Resource, namespace: a.Namespace, name: a.Name})
		}
	}
	return needs, metav1.Condition{}, true
}

func scope(pol *policy.Policy) []client.ListOption {
	if pol.Ref.Namespace == "" {
		return nil
	}
	return []client.ListOption{client.InNamespace(pol.Ref.Namespace)}
}
