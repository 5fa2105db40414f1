/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
)

// actor is who needs a permission: the controller (zero value) or a
// ServiceAccount the controller impersonates.
type actor struct {
	serviceAccount string
	namespace      string
}

func (a actor) String() string {
	if a.serviceAccount == "" {
		return "the controller"
	}
	return "ServiceAccount " + a.namespace + "/" + a.serviceAccount
}

// access is one permission a policy needs.
type access struct {
	who       actor
	what      string // the spec field that needs it
	verb      string
	resource  schema.GroupVersionResource
	namespace string // empty: cluster-wide
	name      string // empty: any
}

// clusterCheckTTL is how long a policy version's checks against the
// cluster are trusted before they are asked again: permissions and
// admission rules change rarely, and each check is a few API calls.
const clusterCheckTTL = 5 * time.Minute

// clusterCheckJitter spreads the passed checks' expiry over up to 20% more
// than clusterCheckTTL: policies first checked together (a controller
// start) would otherwise be asked again together, every 5 minutes, in one
// burst of reviews (docs/performance.md, "Scale": 3,910 at 1,002 policies).
const clusterCheckJitter = 0.2

// failedCheckTTL is how long a failed check is trusted: the missing right
// is often granted moments later (a GitOps sync applies RBAC and policies
// in no set order), and the policy should be served as soon as it is.
const failedCheckTTL = 5 * time.Second

type clusterCheck struct {
	generation int64
	at         time.Time
	// ttl is how long this answer is trusted (checkTTL).
	ttl time.Duration
	// failed is the Ready condition when a check failed; nil when all
	// passed.
	failed *metav1.Condition
	// identityDenied says the check that failed was a right of the
	// ServiceAccount the policy acts as.
	identityDenied bool
}

// checkCluster asks the API server whether the controller may do everything
// the policy needs (SelfSubjectAccessReviews) and whether it accepts each
// job step's Job (a server-side dry run), so that neither is found out only
// when an object is deleted. The answer is cached per policy version for
// clusterCheckTTL when they passed, failedCheckTTL when they did not.
func (r *Reconciler) checkCluster(ctx context.Context, pol *policy.Policy, needs []access) (cond metav1.Condition, ok, identityDenied bool) {
	r.mu.Lock()
	cached, found := r.checks[pol.UID]
	r.mu.Unlock()
	if !found || cached.generation != pol.Generation || time.Since(cached.at) >= cached.ttl {
		failed, denied, err := r.firstFailedCheck(ctx, pol, needs)
		if err != nil {
			// Not cached: the next reconcile asks again.
			return notReady(teardownv1alpha1.ForbiddenReason, "checking the policy against the cluster: %s", err), false, false
		}
		cached = clusterCheck{generation: pol.Generation, at: time.Now(), ttl: checkTTL(failed != nil), failed: failed, identityDenied: denied}
		r.mu.Lock()
		if r.checks == nil {
			r.checks = map[types.UID]clusterCheck{}
		}
		r.checks[pol.UID] = cached
		r.mu.Unlock()
	}
	if cached.failed != nil {
		return *cached.failed, false, cached.identityDenied
	}
	return metav1.Condition{}, true, false
}

// checkTTL is how long a check's answer is trusted: failedCheckTTL when it
// failed, clusterCheckTTL plus up to clusterCheckJitter of it when it passed.
func checkTTL(failed bool) time.Duration {
	if failed {
		return failedCheckTTL
	}
	return wait.Jitter(clusterCheckTTL, clusterCheckJitter)
}

func (r *Reconciler) firstFailedCheck(ctx context.Context, pol *policy.Policy, needs []access) (*metav1.Condition, bool, error) {
	for _, need := range needs {
		allowed, err := r.allowed(ctx, need)
		if err != nil {
			return nil, false, err
		}
		if !allowed {
			where := "cluster-wide"
			if need.namespace != "" {
				where = "in namespace " + need.namespace
			}
			object := need.resource.GroupResource().String()
			if need.name != "" {
				object += " " + need.name
			}
			grant := "grant it with a ClusterRole labelled teardown.dev/aggregate-to-controller: \"true\""
			switch {
			case need.who.serviceAccount == "" && need.resource.Group == "batch" && need.resource.Resource == "jobs":
				grant = "bind the ClusterRole teardown-controller-jobs to it with a RoleBinding in namespace " + need.namespace
			case need.who.serviceAccount != "":
				grant = "bind it a Role in namespace " + need.who.namespace + " that allows it"
			}
			c := notReady(teardownv1alpha1.ForbiddenReason, "%s: %s may not %s %s %s; %s", need.what, need.who, need.verb, object, where, grant)
			return &c, need.who.serviceAccount != "", nil
		}
	}
	sa := ""
	if pol.Ref.Kind == policy.KindNamespaced {
		sa, _ = r.Runner.Identities.ServiceAccount(pol) // checked by needs
	}
	for i, s := range pol.Steps {
		if s.Job == nil {
			continue
		}
		if msg, err := r.dryRunJob(ctx, pol, s.Step, sa); err != nil {
			return nil, false, err
		} else if msg != "" {
			c := notReady(teardownv1alpha1.InvalidJobTemplateReason, "spec.steps[%d] (%s): the API server refuses its Job: %s", i, s.Name, msg)
			return &c, false, nil
		}
	}
	return nil, false, nil
}

// allowed asks the API server whether need's actor may do it: a
// SelfSubjectAccessReview for the controller, a SubjectAccessReview for a
// ServiceAccount (with the groups the API server gives it).
func (r *Reconciler) allowed(ctx context.Context, need access) (bool, error) {
	attrs := &authorizationv1.ResourceAttributes{
		Verb: need.verb, Group: need.resource.Group, Version: need.resource.Version,
		Resource: need.resource.Resource, Namespace: need.namespace, Name: need.name,
	}
	if need.who.serviceAccount == "" {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
		if err := r.direct.Create(ctx, review); err != nil {
			return false, err
		}
		return review.Status.Allowed, nil
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: attrs,
		User:               steps.Username(need.who.namespace, need.who.serviceAccount),
		Groups:             steps.Groups(need.who.namespace),
	}}
	if err := r.direct.Create(ctx, review); err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// dryRunJob creates step's Job, as the step would for some target, with a
// server-side dry run. It returns why the API server refused it; an error
// when it could not tell.
func (r *Reconciler) dryRunJob(ctx context.Context, pol *policy.Policy, step teardownv1alpha1.Step, serviceAccount string) (string, error) {
	probe := steps.Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dry-run", Namespace: pol.Ref.Namespace, UID: "00000000-0000-0000-0000-000000000000"}}}
	ns, err := steps.JobNamespace(pol, step.Job)
	if err != nil {
		return err.Error(), nil
	}
	job := steps.NewJob(pol, step, probe, ns, serviceAccount)
	// Dry-run as whoever will create it for real, so admission judges the
	// same request.
	creator := client.Client(r.direct)
	if serviceAccount != "" {
		var err error
		if _, creator, err = r.Runner.ClientsFor(pol); err != nil {
			return "", err
		}
	}
	err = creator.Create(ctx, job, client.DryRunAll)
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return "", nil
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsNotFound(err):
		// NotFound: the namespace the Jobs would run in does not exist.
		return err.Error(), nil
	case apierrors.IsForbidden(err):
		// RBAC was checked above; what is left is the namespace being
		// terminated or a quota: about the moment, not the template.
		return "", nil
	}
	return "", fmt.Errorf("dry run of the Job of step %s: %w", step.Name, err)
}
