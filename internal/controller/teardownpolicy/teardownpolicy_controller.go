/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package teardownpolicy reconciles TeardownPolicy and ClusterTeardownPolicy:
// it validates each policy against the cluster, puts it in force (watches
// its target kinds, runs its finalizer through the target controller),
// reports its status, and when it is deleted releases every object it
// guarded.
package teardownpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller/target"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/webhook"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// PolicyFinalizer is on every policy, so that deleting one first releases
// the objects it guards: uninstalling never leaves objects stuck.
const PolicyFinalizer = "teardown.dev/release-guarded-objects"

// ReasonReleasedGuardedObjects is the Event reason on a deleted policy.
const ReasonReleasedGuardedObjects = "ReleasedGuardedObjects"

// Reconciler reconciles both policy kinds.
type Reconciler struct {
	Manager  manager.Manager
	Index    *policy.Index
	Targets  *target.Reconciler
	Runner   *steps.Runner
	Recorder events.EventRecorder
	// AttemptTimeout bounds one run of a policy's steps.
	AttemptTimeout time.Duration
	// StatusInterval is how often a policy's counts are refreshed.
	StatusInterval time.Duration
	// WebhookConfiguration names the MutatingWebhookConfiguration whose
	// attach-at-create rules follow the policies; empty when the webhook is
	// off.
	WebhookConfiguration string

	client client.Client
	reader client.Reader
	// direct reads from the API server: Drain pages through lists, which a
	// cache cannot do, and must see what is there now.
	direct  client.Client
	protect *finalizer.Finalizers

	mu sync.Mutex
	// dropped holds, per policy, earlier versions whose key or target kinds
	// an edit removed and whose objects still need releasing.
	dropped map[policy.Ref][]*policy.Policy
	// rbacChecks caches each policy's last RBAC check.
	rbacChecks map[types.UID]rbacCheck
}

// +kubebuilder:rbac:groups=teardown.dev,resources=teardownpolicies;clusterteardownpolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=teardown.dev,resources=teardownpolicies/status;clusterteardownpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;update

// SetupWithManager registers the two policy controllers.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return fmt.Errorf("creating a direct client: %w", err)
	}
	r.direct = direct
	r.protect = finalizer.New(finalizer.ForClient(r.client, r.reader), finalizer.WithEventRecorder(r.Recorder))
	if err := r.protect.Register(PolicyFinalizer, finalizer.HandlerFunc(r.releaseGuarded)); err != nil {
		return err
	}
	for _, kind := range []struct {
		name string
		obj  func() client.Object
	}{
		{"teardownpolicy", func() client.Object { return &teardownv1alpha1.TeardownPolicy{} }},
		{"clusterteardownpolicy", func() client.Object { return &teardownv1alpha1.ClusterTeardownPolicy{} }},
	} {
		err := ctrl.NewControllerManagedBy(mgr).Named(kind.name).
			For(kind.obj(), builder.WithPredicates(specOrLifecycleChange)).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				return r.reconcile(ctx, kind.obj(), req)
			}))
		if err != nil {
			return fmt.Errorf("creating the %s controller: %w", kind.name, err)
		}
	}
	return nil
}

// specOrLifecycleChange passes policy updates the reconciler acts on: a new
// spec (generation), finalizers, deletion. Status writes, our own included,
// would otherwise wake a reconcile that writes status again as fast as the
// counts change; counts are refreshed every StatusInterval instead.
var specOrLifecycleChange = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() || !slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	},
}

func refOf(obj client.Object) policy.Ref {
	if _, ok := obj.(*teardownv1alpha1.ClusterTeardownPolicy); ok {
		return policy.Ref{Kind: policy.KindCluster, Name: obj.GetName()}
	}
	return policy.Ref{Kind: policy.KindNamespaced, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func statusOf(obj client.Object) *teardownv1alpha1.TeardownPolicyStatus {
	switch p := obj.(type) {
	case *teardownv1alpha1.TeardownPolicy:
		return &p.Status
	case *teardownv1alpha1.ClusterTeardownPolicy:
		return &p.Status
	}
	panic(fmt.Sprintf("not a policy: %T", obj))
}

func (r *Reconciler) reconcile(ctx context.Context, obj client.Object, req reconcile.Request) (reconcile.Result, error) {
	defer r.syncWebhook(ctx)
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			obj.SetName(req.Name)
			obj.SetNamespace(req.Namespace)
			r.Index.Delete(refOf(obj))
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ref := refOf(obj)
	pol, polErr := policy.FromObject(obj)

	if obj.GetDeletionTimestamp() != nil {
		terminating, err := r.namespaceTerminating(ctx, obj.GetNamespace())
		if err != nil {
			return reconcile.Result{}, err
		}
		if terminating {
			// Deleted with its namespace: keep serving, so the objects the
			// namespace deletion removes get their cleanup; releaseGuarded
			// waits for them.
			out, err := r.protect.Reconcile(ctx, obj)
			return out.Result(), err
		}
		// Stop attaching before releasing, or the target controller would
		// put back what we remove.
		if current, ok := r.Index.Get(ref); ok {
			releasing := *current
			releasing.Deleting = true
			r.Index.Set(&releasing)
		} else if polErr == nil {
			pol.Deleting = true
			r.Index.Set(pol)
		}
		out, err := r.protect.Reconcile(ctx, obj)
		if len(out.Removed) > 0 {
			r.Index.Delete(ref)
		}
		return out.Result(), err
	}

	out, err := r.protect.Reconcile(ctx, obj)
	if err != nil || !out.Proceed {
		return out.Result(), err
	}

	base := obj.DeepCopyObject().(client.Object)
	status := statusOf(obj)
	ready := r.serve(ctx, obj, pol, polErr)
	ready.ObservedGeneration = obj.GetGeneration()
	meta.SetStatusCondition(&status.Conditions, ready)
	status.ObservedGeneration = obj.GetGeneration()
	if pol != nil {
		status.Finalizer = pol.Key
	}
	if served, ok := r.Index.Get(ref); ok && served.Fin != nil {
		if err := r.count(ctx, served, status); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !equality.Semantic.DeepEqual(statusOf(base), status) {
		if err := r.client.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			if ctx.Err() != nil {
				return reconcile.Result{}, nil // shutting down; the next leader writes it
			}
			return reconcile.Result{}, fmt.Errorf("updating the status: %w", err)
		}
	}
	return reconcile.Result{RequeueAfter: r.StatusInterval}, nil
}

// serve checks the policy against the cluster and, when it can be served,
// puts it in force. It returns the Ready condition. A policy that cannot be
// served leaves any earlier version of itself in force, so objects that
// version guards are still cleaned up rather than stuck.
func (r *Reconciler) serve(ctx context.Context, obj client.Object, pol *policy.Policy, polErr error) metav1.Condition {
	notReady := func(reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	var fieldErr *policy.FieldError
	if errors.As(polErr, &fieldErr) {
		return notReady(fieldErr.Reason, "%s", fieldErr.Error())
	} else if polErr != nil {
		return notReady(teardownv1alpha1.InvalidSelectorReason, "%s", polErr.Error())
	}
	if err := finalizer.ValidateName(pol.Key); err != nil {
		return notReady(teardownv1alpha1.FinalizerConflictReason, "%s", err.Error())
	}
	var needs []access
	for i, t := range pol.Targets {
		mapping, err := r.Manager.GetRESTMapper().RESTMapping(t.GVK.GroupKind(), t.GVK.Version)
		if err != nil {
			return notReady(teardownv1alpha1.UnknownKindReason, "spec.targets[%d]: %s is not served by the API server: %s", i, t.GVK, err)
		}
		clusterScoped := mapping.Scope.Name() == meta.RESTScopeNameRoot
		if clusterScoped && pol.Ref.Kind == policy.KindNamespaced {
			return notReady(teardownv1alpha1.ClusterScopedKindReason, "spec.targets[%d]: %s is cluster-scoped; only a ClusterTeardownPolicy can guard it", i, t.GVK.Kind)
		}
		// One metadata-only informer per kind serves every policy, so
		// watching is cluster-wide even for a namespaced policy.
		what := fmt.Sprintf("spec.targets[%d]", i)
		needs = append(needs, access{what, "list", mapping.Resource, ""}, access{what, "watch", mapping.Resource, ""},
			access{what, "patch", mapping.Resource, pol.Ref.Namespace})
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
			jobs := batchv1.SchemeGroupVersion.WithResource("jobs")
			ns := s.Job.Namespace
			if ns == "" {
				ns = pol.Ref.Namespace
			}
			for _, verb := range []string{"get", "create", "delete"} {
				needs = append(needs, access{what, verb, jobs, ns})
			}
		}
		for _, res := range resources {
			gv, err := schema.ParseGroupVersion(res.APIVersion)
			var mapping *meta.RESTMapping
			if err == nil {
				mapping, err = r.Manager.GetRESTMapper().RESTMapping(gv.WithKind(res.Kind).GroupKind(), gv.Version)
			}
			if err != nil {
				return notReady(teardownv1alpha1.UnknownKindReason, "%s: %s %s is not served by the API server: %s", what, res.APIVersion, res.Kind, err)
			}
			for _, verb := range verbs {
				needs = append(needs, access{what, verb, mapping.Resource, pol.Ref.Namespace})
			}
		}
	}
	if denied, err := r.firstDenied(ctx, pol, needs); err != nil {
		return notReady(teardownv1alpha1.ForbiddenReason, "checking the controller's RBAC: %s", err)
	} else if denied != nil {
		where := "cluster-wide"
		if denied.namespace != "" {
			where = "in namespace " + denied.namespace
		}
		return notReady(teardownv1alpha1.ForbiddenReason,
			"%s: the controller may not %s %s %s; grant it with a ClusterRole labelled teardown.dev/aggregate-to-controller: \"true\"",
			denied.what, denied.verb, denied.resource.GroupResource(), where)
	}
	if other, ok := r.Index.KeyOwner(pol); ok {
		return notReady(teardownv1alpha1.FinalizerConflictReason, "%s already uses finalizer %s for the same kinds", other.Ref, pol.Key)
	}

	current, ok := r.Index.Get(pol.Ref)
	changed := !ok || current.UID != pol.UID || current.Generation != pol.Generation || current.Fin == nil
	if !changed {
		if err := r.releaseDropped(ctx, pol.Ref); err != nil {
			return notReady(teardownv1alpha1.ReleasingReason, "%s", err.Error())
		}
		return r.servingCondition(pol)
	}
	fin, err := r.finalizersFor(pol)
	if err != nil {
		return notReady(teardownv1alpha1.FinalizerConflictReason, "%s", err.Error())
	}
	pol.Fin = fin
	r.Index.Set(pol)
	if ok && current.Fin != nil {
		r.noteDropped(current, pol)
	}
	if err := r.releaseDropped(ctx, pol.Ref); err != nil {
		return notReady(teardownv1alpha1.ReleasingReason, "%s", err.Error())
	}
	for _, t := range pol.Targets {
		if err := r.Targets.Watch(r.Manager, t.GVK); err != nil {
			return notReady(teardownv1alpha1.ForbiddenReason, "%s", err.Error())
		}
	}
	// Existing objects, and the ones an earlier version guarded, get the
	// new version applied (attached, or released if they no longer match).
	kinds := map[schema.GroupVersionKind]bool{}
	for _, p := range []*policy.Policy{current, pol} {
		if p == nil {
			continue
		}
		for _, t := range p.Targets {
			kinds[t.GVK] = true
		}
	}
	for gvk := range kinds {
		if err := r.Targets.Resync(ctx, gvk, scope(pol)...); err != nil {
			return notReady(teardownv1alpha1.ForbiddenReason, "%s", err.Error())
		}
	}
	return r.servingCondition(pol)
}

func (r *Reconciler) servingCondition(pol *policy.Policy) metav1.Condition {
	return metav1.Condition{
		Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: teardownv1alpha1.ServingReason,
		Message: fmt.Sprintf("guarding %d target kind(s) with finalizer %s (%s)", len(pol.Targets), pol.Key, pol.Attach),
	}
}

func scope(pol *policy.Policy) []client.ListOption {
	if pol.Ref.Namespace == "" {
		return nil
	}
	return []client.ListOption{client.InNamespace(pol.Ref.Namespace)}
}

// access is one permission a policy needs from the controller.
type access struct {
	what      string // the spec field that needs it
	verb      string
	resource  schema.GroupVersionResource
	namespace string // empty: cluster-wide
}

// rbacCheckTTL is how long a policy version's RBAC check is trusted before it
// is asked again: permissions change rarely, and each check is a few
// SelfSubjectAccessReviews.
const rbacCheckTTL = 5 * time.Minute

type rbacCheck struct {
	generation int64
	at         time.Time
	denied     *access
}

// firstDenied asks the API server, with SelfSubjectAccessReviews, whether
// the controller may do everything the policy needs, and returns the first
// thing it may not. The answer is cached per policy version for
// rbacCheckTTL.
func (r *Reconciler) firstDenied(ctx context.Context, pol *policy.Policy, needs []access) (*access, error) {
	r.mu.Lock()
	cached, ok := r.rbacChecks[pol.UID]
	r.mu.Unlock()
	if ok && cached.generation == pol.Generation && time.Since(cached.at) < rbacCheckTTL {
		return cached.denied, nil
	}
	var denied *access
	for _, need := range needs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: need.verb, Group: need.resource.Group, Version: need.resource.Version,
				Resource: need.resource.Resource, Namespace: need.namespace,
			},
		}}
		if err := r.direct.Create(ctx, review); err != nil {
			return nil, err
		}
		if !review.Status.Allowed {
			denied = &need
			break
		}
	}
	r.mu.Lock()
	if r.rbacChecks == nil {
		r.rbacChecks = map[types.UID]rbacCheck{}
	}
	r.rbacChecks[pol.UID] = rbacCheck{generation: pol.Generation, at: time.Now(), denied: denied}
	r.mu.Unlock()
	return denied, nil
}

// finalizersFor builds the finalizer that runs pol's steps.
func (r *Reconciler) finalizersFor(pol *policy.Policy) (*finalizer.Finalizers, error) {
	fin := finalizer.New(finalizer.ForClient(r.client, r.reader), finalizer.WithEventRecorder(r.Recorder))
	attach := finalizer.AttachAutomatic
	if pol.Attach == teardownv1alpha1.AttachDeclared {
		attach = finalizer.AttachDeclared
	}
	opts := []finalizer.RegisterOption{finalizer.WithAttach(attach), finalizer.WithAttemptTimeout(r.AttemptTimeout)}
	if pol.Deadline > 0 {
		expiry := finalizer.ExpiryBlock
		if pol.OnDeadline == teardownv1alpha1.DeadlineRelease {
			expiry = finalizer.ExpiryRelease
		}
		opts = append(opts, finalizer.WithDeadline(pol.Deadline, expiry))
	}
	run := finalizer.HandlerFunc(func(ctx context.Context, obj client.Object) finalizer.Result {
		return r.Runner.Run(ctx, pol, steps.Target{GVK: obj.GetObjectKind().GroupVersionKind(), Obj: obj})
	})
	if err := fin.Register(pol.Key, run, opts...); err != nil {
		return nil, err
	}
	return fin, nil
}

// releaseGuarded is the cleanup of a deleted policy: remove its key from
// every object it guarded. A Declared key is removed only from objects the
// policy selects; an Automatic one from every object of its kinds in scope.
func (r *Reconciler) releaseGuarded(ctx context.Context, obj client.Object) finalizer.Result {
	pol, ok := r.Index.Get(refOf(obj))
	if !ok {
		var err error
		if pol, err = policy.FromObject(obj); err != nil {
			// Never served, so it guards nothing.
			return finalizer.Done()
		}
	}
	terminating, err := r.namespaceTerminating(ctx, obj.GetNamespace())
	if err != nil {
		return finalizer.Retry(err)
	}
	if terminating {
		remaining, err := r.countGuarded(ctx, pol)
		if err != nil {
			return finalizer.Retry(err)
		}
		if remaining > 0 {
			return finalizer.Pending(2*time.Second, fmt.Sprintf(
				"namespace %s is being deleted: waiting for %d guarded object(s) to finish their cleanup", obj.GetNamespace(), remaining))
		}
		r.Index.Delete(pol.Ref)
		return finalizer.Done()
	}
	released, err := r.release(ctx, pol, pol.Targets)
	r.Targets.Released.Add(pol.Ref, released)
	if err != nil {
		return finalizer.Retry(err)
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, "Normal", ReasonReleasedGuardedObjects, "Release",
			"Policy deleted: removed finalizer %s from %d object(s)", pol.Key, released)
	}
	return finalizer.Done()
}

// namespaceTerminating reports whether ns (a namespaced policy's own) is
// being deleted. Read from the API server: this decides whether cleanups run.
func (r *Reconciler) namespaceTerminating(ctx context.Context, ns string) (bool, error) {
	if ns == "" {
		return false, nil
	}
	nsObj := &metav1.PartialObjectMetadata{}
	nsObj.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	if err := r.reader.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	return nsObj.DeletionTimestamp != nil, nil
}

// countGuarded counts the objects in scope that still carry pol's key.
func (r *Reconciler) countGuarded(ctx context.Context, pol *policy.Policy) (int, error) {
	n := 0
	for _, t := range pol.Targets {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(t.GVK.GroupVersion().WithKind(t.GVK.Kind + "List"))
		if err := r.direct.List(ctx, list, scope(pol)...); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return 0, fmt.Errorf("listing %s: %w", t.GVK.Kind, err)
		}
		for _, o := range list.Items {
			if slices.Contains(o.Finalizers, pol.Key) {
				n++
			}
		}
	}
	return n, nil
}

// release removes pol's key from the objects of targets it guards. A Declared
// key is removed only from objects the targets select; an Automatic one from
// every object of their kinds in scope.
func (r *Reconciler) release(ctx context.Context, pol *policy.Policy, targets []policy.Target) (int, error) {
	released := 0
	for _, t := range targets {
		opts := scope(pol)
		if pol.Attach == teardownv1alpha1.AttachDeclared {
			opts = append(opts, client.MatchingLabelsSelector{Selector: t.Selector})
		}
		report, err := finalizer.Drain(ctx, r.direct, t.GVK, pol.Key, opts...)
		released += len(report.Removed)
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue // the kind is gone, and its objects with it
			}
			return released, fmt.Errorf("releasing %s objects: %w", t.GVK.Kind, err)
		}
	}
	return released, nil
}

// noteDropped remembers what an edit of a policy stopped guarding: every
// target under its old key when the key changed, else the target kinds it
// no longer has. The target controller only sees policies as they are now,
// so nobody else would ever release those.
func (r *Reconciler) noteDropped(old, updated *policy.Policy) {
	dropped := *old
	dropped.Targets = nil
	for _, t := range old.Targets {
		if old.Key != updated.Key || !updated.TargetsKind(t.GVK) {
			dropped.Targets = append(dropped.Targets, t)
		}
	}
	if len(dropped.Targets) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dropped == nil {
		r.dropped = map[policy.Ref][]*policy.Policy{}
	}
	r.dropped[old.Ref] = append(r.dropped[old.Ref], &dropped)
}

// releaseDropped releases what earlier versions of the policy stopped
// guarding, keeping what could not be released yet for the next reconcile.
func (r *Reconciler) releaseDropped(ctx context.Context, ref policy.Ref) error {
	r.mu.Lock()
	pending := r.dropped[ref]
	delete(r.dropped, ref)
	r.mu.Unlock()
	for i, old := range pending {
		n, err := r.release(ctx, old, old.Targets)
		r.Targets.Released.Add(ref, n)
		if err != nil {
			r.mu.Lock()
			r.dropped[ref] = append(pending[i:], r.dropped[ref]...)
			r.mu.Unlock()
			return fmt.Errorf("releasing what the previous version guarded: %w", err)
		}
	}
	return nil
}

// syncWebhook keeps the attach-at-create webhook's rules on the kinds the
// policies in force target. A failure is logged and retried at the next
// reconcile: the webhook only narrows a race the controller covers anyway.
func (r *Reconciler) syncWebhook(ctx context.Context) {
	if r.WebhookConfiguration == "" {
		return
	}
	rules := webhook.Rules(r.Index, r.Manager.GetRESTMapper())
	if err := webhook.SyncRules(ctx, r.direct, r.WebhookConfiguration, rules); err != nil {
		logf.FromContext(ctx).Error(err, "Could not update the attach-at-create webhook rules")
	}
}
