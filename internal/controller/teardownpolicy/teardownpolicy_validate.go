/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller/target"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func notReady(reason, format string, args ...any) metav1.Condition {
	return metav1.Condition{Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// validate checks a policy version against the cluster before it is put in
// force. It returns ok, or the Ready condition that says what is wrong.
func (r *Reconciler) validate(ctx context.Context, pol *policy.Policy, polErr error) (metav1.Condition, bool) {
	var fieldErr *policy.FieldError
	if errors.As(polErr, &fieldErr) {
		return notReady(fieldErr.Reason, "%s", fieldErr.Error()), false
	} else if polErr != nil {
		return notReady(teardownv1alpha1.InvalidSelectorReason, "%s", polErr.Error()), false
	}
	if err := finalizer.ValidateName(pol.Key); err != nil {
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
	if cond, ok := r.checkOwner(ctx, pol); !ok {
		// Another policy owns the key now: this one must stop acting on
		// it, even if an earlier version of it was served.
		r.Index.Delete(pol.Ref)
		return cond, false
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
		case s.Webhook != nil:
			if err := r.Runner.HTTP.CheckDestination(s.Webhook); err != nil {
				return nil, notReady(teardownv1alpha1.InvalidWebhookReason, "%s: %s", what, err), false
			}
			if svc := s.Webhook.Service; svc != nil && pol.Ref.Kind == policy.KindNamespaced && svc.Namespace != pol.Ref.Namespace {
				return nil, notReady(teardownv1alpha1.ClusterScopedKindReason, "%s: webhook.service in namespace %s: a TeardownPolicy calls Services of its own namespace only", what, svc.Namespace), false
			}
			if ns, ok := serviceNamespaceOf(s.Webhook.URL); ok && pol.Ref.Kind == policy.KindNamespaced && ns != pol.Ref.Namespace {
				return nil, notReady(teardownv1alpha1.ClusterScopedKindReason, "%s: webhook.url names a Service of namespace %s: a TeardownPolicy calls Services of its own namespace only", what, ns), false
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

// serviceNamespaceOf returns the namespace of a Service named by a URL's
// cluster DNS name (<service>.<namespace>.svc, optionally followed by the
// cluster domain). Other hosts, IP addresses included, are not recognised:
// restrict the controller's egress with a NetworkPolicy for those.
func serviceNamespaceOf(rawURL *string) (string, bool) {
	if rawURL == nil {
		return "", false
	}
	u, err := url.Parse(*rawURL)
	if err != nil {
		return "", false
	}
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), ".")
	if len(labels) >= 3 && labels[2] == "svc" {
		return labels[1], true
	}
	return "", false
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

type clusterCheck struct {
	generation int64
	at         time.Time
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
// clusterCheckTTL.
func (r *Reconciler) checkCluster(ctx context.Context, pol *policy.Policy, needs []access) (cond metav1.Condition, ok, identityDenied bool) {
	r.mu.Lock()
	cached, found := r.checks[pol.UID]
	r.mu.Unlock()
	if !found || cached.generation != pol.Generation || time.Since(cached.at) >= clusterCheckTTL {
		failed, denied, err := r.firstFailedCheck(ctx, pol, needs)
		if err != nil {
			// Not cached: the next reconcile asks again.
			return notReady(teardownv1alpha1.ForbiddenReason, "checking the policy against the cluster: %s", err), false, false
		}
		cached = clusterCheck{generation: pol.Generation, at: time.Now(), failed: failed, identityDenied: denied}
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
	probe := steps.Target{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dry-run", Namespace: pol.Ref.Namespace, UID: "00000000-0000-0000-0000-000000000000"}}}
	job := steps.NewJob(pol, step, probe, jobNamespace(pol, step.Job), serviceAccount)
	// Dry-run as whoever will create it for real, so admission judges the
	// same request.
	creator := client.Client(r.direct)
	if serviceAccount != "" {
		var err error
		if _, creator, err = r.Runner.ClientsFor(pol); err != nil {
			return "", err
		}
	}
	err := creator.Create(ctx, job, client.DryRunAll)
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

// checkOwner makes sure pol owns its key: of every policy whose key and
// target kinds overlap it, only the oldest is served.
func (r *Reconciler) checkOwner(ctx context.Context, pol *policy.Policy) (metav1.Condition, bool) {
	mine := policy.Claim{Ref: pol.Ref, Created: pol.Created, Key: pol.Key, Kinds: pol.Kinds()}
	owner, err := r.ownerOf(ctx, mine)
	if err != nil {
		return notReady(teardownv1alpha1.FinalizerConflictReason, "finding who owns finalizer %s: %s", pol.Key, err), false
	}
	if owner.Ref != pol.Ref {
		return notReady(teardownv1alpha1.FinalizerConflictReason,
			"%s, created earlier, owns finalizer %s for the same kinds; this policy is not served while it does", owner.Ref, pol.Key), false
	}
	return metav1.Condition{}, true
}

// ownerOf returns the owner of mine's key, read from the policies in the
// cache, so every replica and every restart decides alike.
func (r *Reconciler) ownerOf(ctx context.Context, mine policy.Claim) (policy.Claim, error) {
	var claims []policy.Claim
	namespaced := &teardownv1alpha1.TeardownPolicyList{}
	if err := r.client.List(ctx, namespaced); err != nil {
		return policy.Claim{}, fmt.Errorf("listing policies: %w", err)
	}
	for i := range namespaced.Items {
		if c, ok := policy.ClaimOf(&namespaced.Items[i]); ok {
			claims = append(claims, c)
		}
	}
	cluster := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := r.client.List(ctx, cluster); err != nil {
		return policy.Claim{}, fmt.Errorf("listing policies: %w", err)
	}
	for i := range cluster.Items {
		if c, ok := policy.ClaimOf(&cluster.Items[i]); ok {
			claims = append(claims, c)
		}
	}
	return policy.Owner(mine, claims), nil
}

// checkForeignKey refuses an Automatic policy whose key is already on
// objects it does not select and that Teardown never attached it to: the key
// is another controller's (or a manifest's), and serving the policy would
// take part in that controller's protocol.
func (r *Reconciler) checkForeignKey(ctx context.Context, pol *policy.Policy) (metav1.Condition, bool) {
	if pol.Attach != teardownv1alpha1.AttachAutomatic {
		return metav1.Condition{}, true
	}
	served := &policy.Served{Policy: pol, Keys: []policy.ServedKey{{Key: pol.Key, Kinds: pol.Kinds()}}}
	for _, gvk := range pol.Kinds() {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.client.List(ctx, list, append(scope(pol), client.UnsafeDisableDeepCopy)...); err != nil {
			return notReady(teardownv1alpha1.ForbiddenReason, "listing %s: %s", gvk.Kind, err), false
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if !slices.Contains(obj.Finalizers, pol.Key) {
				continue
			}
			nsLabels, err := r.nsLabelsFor(ctx, pol, obj)
			if err != nil {
				return notReady(teardownv1alpha1.ForbiddenReason, "%s", err), false
			}
			if !target.Owns(served, served.Keys[0], gvk, obj, nsLabels) {
				return notReady(teardownv1alpha1.FinalizerConflictReason,
					"finalizer %s is on %s %s, which this policy does not select and Teardown did not put there: another controller or a manifest uses this key; choose another",
					pol.Key, gvk.Kind, klog.KObj(obj)), false
			}
		}
	}
	return metav1.Condition{}, true
}

// nsLabelsFor reads obj's namespace labels when pol selects namespaces.
func (r *Reconciler) nsLabelsFor(ctx context.Context, pol *policy.Policy, obj metav1.Object) (map[string]string, error) {
	if obj.GetNamespace() == "" || !slices.ContainsFunc(pol.Targets, func(t policy.Target) bool { return t.NamespaceSelector != nil }) {
		return nil, nil
	}
	return target.NamespaceLabels(ctx, r.client, obj.GetNamespace())
}

func scope(pol *policy.Policy) []client.ListOption {
	if pol.Ref.Namespace == "" {
		return nil
	}
	return []client.ListOption{client.InNamespace(pol.Ref.Namespace)}
}
