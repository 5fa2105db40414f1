/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package teardownpolicy reconciles TeardownPolicy and ClusterTeardownPolicy:
// it validates each policy against the cluster (teardownpolicy_validate.go:
// what it may ask for; teardownpolicy_access.go: whether the controller or
// its ServiceAccount may do it; teardownpolicy_owner.go: whether its key is
// its own), puts it in force (teardownpolicy_serve.go), reports its status
// (teardownpolicy_controller_status.go), and when it is deleted releases
// what it guards once the teardowns it started are done
// (teardownpolicy_release.go).
package teardownpolicy

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/admit"
	"github.com/teardown-dev/teardown/internal/fairqueue"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// Diagnoses is what the status reads of the diagnosis: the root cause found
// for an object's cleanup under key, and whether it was looked for (until
// then the status keeps what an earlier leader recorded).
type Diagnoses interface {
	Lookup(key string, uid types.UID) *teardownv1alpha1.Diagnosis
	Judged(key string, uid types.UID) bool
}

// ReasonReleasedGuardedObjects is the Event reason on a deleted policy.
const ReasonReleasedGuardedObjects = "ReleasedGuardedObjects"

// Reconciler reconciles both policy kinds.
type Reconciler struct {
	Manager  manager.Manager
	Index    *policy.Index
	Targets  *guarded.Reconciler
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
	// Diagnoses, when set, gives status.blockedObjects the root cause the
	// diagnosis found (internal/controller/diagnosis).
	Diagnoses Diagnoses

	client client.Client
	reader client.Reader
	// direct reads from the API server: Drain pages through lists, which a
	// cache cannot do, and must see what is there now.
	direct  client.Client
	protect *finalizer.Finalizers

	mu sync.Mutex
	// checks caches each policy version's checks against the cluster.
	checks map[types.UID]clusterCheck
}

// +kubebuilder:rbac:groups=teardown.dev,resources=teardownpolicies;clusterteardownpolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=teardown.dev,resources=teardownpolicies/status;clusterteardownpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// No Job rights here: a TeardownPolicy's Jobs are created as its
// ServiceAccount, and a ClusterTeardownPolicy's only where its installer
// binds config/rbac/jobs_role.yaml (ClusterRole teardown-controller-jobs) in
// the Job's namespace.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// Only the attach webhook's own configuration (config/webhook; rename both
// with --attach-webhook-configuration).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;update,resourceNames=teardown-attach-finalizers
// A TeardownPolicy acts as a ServiceAccount of its namespace: the controller
// impersonates it for its steps, and asks the authorizer (SubjectAccessReview)
// what that ServiceAccount may do, to report missing rights up front.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// SetupWithManager registers the two policy controllers.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return fmt.Errorf("creating a direct client: %w", err)
	}
	r.direct = direct
	if err := indexPolicies(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r.protect = finalizer.New(finalizer.ForClient(r.client, r.reader), finalizer.WithEventRecorder(r.Recorder))
	if err := r.protect.Register(teardownv1alpha1.PolicyFinalizer, finalizer.HandlerFunc(r.releaseGuarded)); err != nil {
		return err
	}
	for _, kind := range []struct {
		name string
		obj  func() teardownv1alpha1.PolicyObject
	}{
		{"teardownpolicy", func() teardownv1alpha1.PolicyObject { return &teardownv1alpha1.TeardownPolicy{} }},
		{"clusterteardownpolicy", func() teardownv1alpha1.PolicyObject { return &teardownv1alpha1.ClusterTeardownPolicy{} }},
	} {
		err := ctrl.NewControllerManagedBy(mgr).Named(kind.name).
			For(kind.obj(), builder.WithPredicates(specOrLifecycleChange)).
			WithOptions(controller.Options{NewQueue: fairAcrossNamespaces}).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				return r.reconcile(ctx, kind.obj(), req)
			}))
		if err != nil {
			return fmt.Errorf("creating the %s controller: %w", kind.name, err)
		}
	}
	return nil
}

// fairAcrossNamespaces is the policy controllers' queue: one worker serves
// the policies, in turn across namespaces (internal/fairqueue), so that a
// tenant's burst of policies, or the periodic status refresh of hundreds of
// them, delays another tenant's policy by at most one reconcile per other
// namespace with work queued, not by the whole burst.
func fairAcrossNamespaces(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return fairqueue.NewRateLimiting(name, rateLimiter, func(req reconcile.Request) string { return req.Namespace })
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

func (r *Reconciler) reconcile(ctx context.Context, obj teardownv1alpha1.PolicyObject, req reconcile.Request) (reconcile.Result, error) {
	defer r.syncWebhook(ctx)
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			obj.SetName(req.Name)
			obj.SetNamespace(req.Namespace)
			r.Index.Delete(policy.RefOf(obj))
			forgetPolicy(obj)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := obj.DeepCopyObject().(teardownv1alpha1.PolicyObject)
	status := obj.PolicyStatus()
	pol, polErr := policy.FromObject(obj)

	if obj.GetDeletionTimestamp() != nil {
		// Served again after a restart, and served as deleting: no more
		// attaching, teardowns under way go on.
		if ready := r.serveDeleting(ctx, obj, pol, polErr); ready != nil {
			setConditions(status, *ready, obj.GetGeneration(), true)
		}
		// The cleanup's attempt writes its progress annotation with a patch
		// whose answer replaces obj, status included: what serving wrote
		// in the status is put back after it.
		served := status.DeepCopy()
		out, err := r.protect.Reconcile(ctx, obj)
		if len(out.Removed) > 0 {
			r.Index.Delete(policy.RefOf(obj))
			forgetPolicy(obj)
			return reconcile.Result{}, err
		}
		*obj.PolicyStatus() = *served
		if err == nil {
			err = r.writeStatus(ctx, base, obj)
		}
		return out.Result(), err
	}

	out, err := r.protect.Reconcile(ctx, obj)
	if err != nil || !out.Proceed {
		return out.Result(), err
	}

	setConditions(status, r.serve(ctx, obj, pol, polErr), obj.GetGeneration(), false)
	status.ObservedGeneration = obj.GetGeneration()
	if err := r.writeStatus(ctx, base, obj); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.StatusInterval}, nil
}

// serveDeleting keeps a deleted policy in force, marked as deleting, so the
// teardowns it started finish. A Terminating policy's spec can still be
// edited (the admission policy teardown-freeze-deleted-policies refuses
// that where it is installed), so the current spec is served only once it
// passed every check a live policy gets; otherwise the version served
// before stays in force, now as deleting (keepServed: from memory, or from
// status.servedSpec after a restart), and when none passes the checks now
// releaseGuarded waits, releasing nothing.
// It returns the Ready condition, nil to leave it as it is.
func (r *Reconciler) serveDeleting(ctx context.Context, obj teardownv1alpha1.PolicyObject, pol *policy.Policy, polErr error) *metav1.Condition {
	if obj.PolicyStatus().Finalizer == "" {
		if current, ok := r.Index.Get(policy.RefOf(obj)); !ok || current.UID != obj.GetUID() {
			return nil // never served: it guards nothing
		}
	}
	cond, ok := r.validate(ctx, pol, polErr, obj.PolicyStatus(), specRecorded(obj))
	if ok {
		if err := r.putInForce(ctx, pol, obj.PolicyStatus()); err != nil {
			cond, ok = notReady(teardownv1alpha1.ForbiddenReason, "%s", err.Error()), false
		}
	}
	if ok {
		recordServed(obj)
		msg := fmt.Sprintf("deleted: finishing the teardowns it started with finalizer %s, attaching no more", pol.Key)
		if cond.Message != "" {
			msg += fmt.Sprintf("; its namespace is being deleted, which took rights its ServiceAccount needs (%s): steps that need them fail until the namespace's objects go", cond.Message)
		}
		return &metav1.Condition{Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: teardownv1alpha1.ServingReason, Message: msg}
	}
	kept := r.keepServed(ctx, obj)
	if current, ok := r.Index.Get(policy.RefOf(obj)); kept == "" && ok && current.UID == obj.GetUID() && current.Yielded() {
		kept = "it finishes only the teardowns it started"
	} else if kept == "" {
		kept = "no version of it is in force"
	}
	cond.Message = fmt.Sprintf("deleted, and its current spec cannot be served (%s): %s", kept, cond.Message)
	return &cond
}

// writeStatus refreshes the counts of the policy in force and writes the
// status when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, base, obj teardownv1alpha1.PolicyObject) error {
	status := obj.PolicyStatus()
	if served, ok := r.Index.Get(policy.RefOf(obj)); ok && served.UID == obj.GetUID() {
		if err := r.count(ctx, served, status); err != nil {
			return err
		}
	}
	if r.Runner != nil {
		// Its own write, with the resourceVersion it reads: the patch below
		// leaves status.startedTeardowns alone.
		if err := r.Runner.Starters.Prune(ctx, obj); err != nil && ctx.Err() == nil {
			logf.FromContext(ctx).Info("Could not prune status.startedTeardowns", "err", err.Error())
		}
	}
	observePolicy(obj, status) // the gauges follow what the status says
	if equality.Semantic.DeepEqual(base.PolicyStatus(), status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		if ctx.Err() != nil {
			return nil // shutting down; the next leader writes it
		}
		return fmt.Errorf("updating the status: %w", err)
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
	rules := admit.Rules(r.Index, r.Manager.GetRESTMapper())
	if err := admit.SyncRules(ctx, r.direct, r.WebhookConfiguration, rules); err != nil {
		logf.FromContext(ctx).Error(err, "Could not update the attach-at-create webhook rules")
	}
}
