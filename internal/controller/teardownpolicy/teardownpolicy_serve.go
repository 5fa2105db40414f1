/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// serve checks the policy against the cluster and, when it can be served,
// puts it in force. It returns the Ready condition. A policy that cannot be
// served leaves any earlier version of itself in force, so objects that
// version guards are still cleaned up rather than stuck.
func (r *Reconciler) serve(ctx context.Context, obj teardownv1alpha1.PolicyObject, pol *policy.Policy, polErr error) metav1.Condition {
	if cond, ok := r.validate(ctx, pol, polErr, obj.PolicyStatus(), false); !ok {
		if kept := r.keepServed(ctx, obj); kept != "" {
			cond.Message += "; " + kept
		}
		return cond
	}
	// Before any cleanup needs it, so that what a step reads (the in-use
	// index) has synced by then.
	r.Runner.Prepare(pol)
	if err := r.putInForce(ctx, pol, obj.PolicyStatus()); err != nil {
		return notReady(teardownv1alpha1.ForbiddenReason, "%s", err.Error())
	}
	recordServed(obj)
	return metav1.Condition{
		Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: teardownv1alpha1.ServingReason,
		Message: fmt.Sprintf("guarding %d target kind(s) with finalizer %s (%s)", len(pol.Kinds()), pol.Key, pol.Attach),
	}
}

// recordServed records obj's spec, just put in force, in its status
// (servedSpec, servedGeneration): the version that stays in force if a later
// spec cannot be served, read from the API server after a restart.
func recordServed(obj teardownv1alpha1.PolicyObject) {
	spec, err := specRecord(obj)
	if err != nil {
		return // a spec the API server stored always marshals
	}
	status := obj.PolicyStatus()
	status.ServedSpec, status.ServedGeneration = spec, obj.GetGeneration()
}

// specRecord is obj's spec as status.servedSpec records it.
func specRecord(obj teardownv1alpha1.PolicyObject) (string, error) {
	spec, err := json.Marshal(obj.PolicySpec())
	return string(spec), err
}

// keepServed keeps in force the version of obj served before, when its
// current spec cannot be served: the one this process serves, else (after a
// restart) the one status.servedSpec records, checked again first (the
// status is the controller's, but anyone granted policies/status could
// write it: it is served only if it passes every check, but for the
// ServiceAccount's rights a namespace's deletion took, validate). A policy
// being deleted keeps it as deleting, so the teardowns it started finish.
// It says what stays in force, "" when nothing does.
func (r *Reconciler) keepServed(ctx context.Context, obj teardownv1alpha1.PolicyObject) string {
	if current, ok := r.Index.Get(policy.RefOf(obj)); ok && current.UID == obj.GetUID() {
		if current.Yielded() {
			return "" // its condition says it finishes only the teardowns it started
		}
		if obj.GetDeletionTimestamp() != nil && !current.Deleting {
			// A copy: served versions never change.
			deleting := *current.Policy
			deleting.Deleting = true
			if err := r.putInForce(ctx, &deleting, obj.PolicyStatus()); err != nil {
				logf.FromContext(ctx).Error(err, "Could not keep the version in force as deleting")
			}
		}
		return fmt.Sprintf("the version served before (generation %d) stays in force", current.Generation)
	}
	served := servedVersion(obj)
	if served == nil {
		return ""
	}
	pol, polErr := policy.FromObject(served)
	if _, ok := r.validate(ctx, pol, polErr, obj.PolicyStatus(), true); !ok {
		return ""
	}
	if err := r.putInForce(ctx, pol, obj.PolicyStatus()); err != nil {
		logf.FromContext(ctx).Error(err, "Could not put the version served before in force again")
		return ""
	}
	return fmt.Sprintf("the version served before (generation %d, recorded in status.servedSpec) stays in force", pol.Generation)
}

// servedVersion returns obj as it was when status.servedSpec was put in
// force: its spec and generation; nil when there is no such earlier
// version, or it does not parse.
func servedVersion(obj teardownv1alpha1.PolicyObject) teardownv1alpha1.PolicyObject {
	status := obj.PolicyStatus()
	if status.ServedSpec == "" || status.ServedGeneration == obj.GetGeneration() || len(status.ServedSpec) > maxServedSpec {
		return nil
	}
	var spec teardownv1alpha1.TeardownPolicySpec
	if err := json.Unmarshal([]byte(status.ServedSpec), &spec); err != nil {
		return nil
	}
	served := obj.DeepCopyObject().(teardownv1alpha1.PolicyObject)
	*served.PolicySpec() = spec
	served.SetGeneration(status.ServedGeneration)
	return served
}

// specRecorded tells whether obj's spec is the one its status records as
// served.
func specRecorded(obj teardownv1alpha1.PolicyObject) bool {
	served := obj.PolicyStatus().ServedSpec
	if served == "" {
		return false
	}
	spec, err := specRecord(obj)
	return err == nil && spec == served
}

// maxServedSpec bounds what is parsed, as the CRD bounds status.servedSpec.
const maxServedSpec = 1 << 20

// putInForce serves pol, with the keys earlier versions left on objects,
// and records in status what is served: status.finalizer and status.kinds
// for pol, status.retired for the rest. What an edit retires is worked out
// from the status, not from memory, so a restart between an edit and its
// first reconcile loses nothing.
func (r *Reconciler) putInForce(ctx context.Context, pol *policy.Policy, status *teardownv1alpha1.TeardownPolicyStatus) error {
	// Whether any controller served a version of it before: status names a
	// key (read before this version's is recorded below).
	servedBefore := status.Finalizer != ""
	retired := retiredKeys(pol, status)
	kinds := pol.Kinds()
	for _, rk := range retired {
		if !slices.Contains(kinds, rk.gvk) {
			kinds = append(kinds, rk.gvk)
		}
	}
	for _, gvk := range kinds {
		if err := r.Targets.Watch(r.Manager, gvk); err != nil {
			return err
		}
	}
	retired, err := r.pruneRetired(ctx, pol, retired)
	if err != nil {
		return err
	}
	status.Finalizer = pol.Key
	status.Kinds = nil
	for _, gvk := range pol.Kinds() {
		status.Kinds = append(status.Kinds, apiGVK(gvk))
	}
	status.Retired = nil
	for _, rk := range retired {
		status.Retired = append(status.Retired, teardownv1alpha1.RetiredKey{Finalizer: rk.key, GroupVersionKind: apiGVK(rk.gvk)})
	}

	if status.BoundRecordsSince == nil {
		// First served by a controller that binds its records. Served by
		// an earlier release before (its status names a key): that
		// release's unbound records count on the objects created before
		// now (policy.Served.EarlierRelease). Never served before: no
		// earlier release wrote any, so none counts, not even on an object
		// created between the policy's creation and now, whose creator
		// knew the policy's UID and could write one.
		since := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		if !servedBefore {
			since = metav1.NewTime(pol.Created)
		}
		status.BoundRecordsSince = &since
	}

	current, ok := r.Index.Get(pol.Ref)
	if ok && current.UID == pol.UID && current.Generation == pol.Generation && current.Deleting == pol.Deleting &&
		!current.Yielded() && slices.Equal(retiredOf(current), retired) && current.BoundRecordsSince.Equal(status.BoundRecordsSince.Time) {
		return nil
	}
	served, err := r.newServed(pol, retired, status)
	if err != nil {
		return err
	}
	r.Index.Set(served)
	// Existing objects, and the ones an earlier version guarded, get the
	// new version applied (attached, released, or their cleanup resumed).
	if ok {
		for _, k := range current.Keys {
			for _, gvk := range k.Kinds {
				if !slices.Contains(kinds, gvk) {
					kinds = append(kinds, gvk)
				}
			}
		}
	}
	for _, gvk := range kinds {
		if err := r.Targets.Resync(ctx, gvk, scope(pol)...); err != nil {
			return err
		}
	}
	return nil
}

// yield keeps pol in force only for the teardowns it started: another
// policy owns its key now. Its keys are served as Finishing (never attached
// or released; an object being deleted whose step record names this policy
// finishes under its steps), in the version in force before if there is
// one, else in pol (after a restart). Ownership never changes hands in the
// middle of a teardown.
func (r *Reconciler) yield(ctx context.Context, pol *policy.Policy, status *teardownv1alpha1.TeardownPolicyStatus) {
	base, ok := r.Index.Get(pol.Ref)
	if ok && base.UID == pol.UID && base.Yielded() && base.Deleting == pol.Deleting {
		return
	}
	if (!ok || base.UID != pol.UID) && status.Finalizer == "" {
		// Never served: it started nothing, and must not get a watch on
		// kinds it was never checked for.
		r.Index.Delete(pol.Ref)
		return
	}
	if !ok || base.UID != pol.UID {
		var err error
		if base, err = r.newServed(pol, retiredKeys(pol, status), status); err != nil {
			logf.FromContext(ctx).Error(err, "Could not keep the policy in force for the teardowns it started")
			r.Index.Delete(pol.Ref)
			return
		}
	}
	version := base.Policy
	if pol.Deleting && !version.Deleting {
		deleting := *version
		deleting.Deleting = true
		version = &deleting
	}
	yielded := &policy.Served{Policy: version, BoundRecordsSince: base.BoundRecordsSince}
	var kinds []schema.GroupVersionKind
	for _, k := range base.Keys {
		k.Finishing = true
		k.Kinds = slices.Clone(k.Kinds)
		yielded.Keys = append(yielded.Keys, k)
		for _, gvk := range k.Kinds {
			if !slices.Contains(kinds, gvk) {
				kinds = append(kinds, gvk)
			}
		}
	}
	for _, gvk := range kinds {
		if err := r.Targets.Watch(r.Manager, gvk); err != nil {
			logf.FromContext(ctx).Error(err, "Could not watch a kind whose teardowns the policy started", "kind", gvk)
		}
	}
	r.Index.Set(yielded)
	for _, gvk := range kinds {
		if err := r.Targets.Resync(ctx, gvk, scope(version)...); err != nil {
			logf.FromContext(ctx).V(1).Info("Could not resync after yielding a key", "kind", gvk, "err", err.Error())
		}
	}
}

// retiredKey is a key an earlier version guarded objects of one kind with.
type retiredKey struct {
	key string
	gvk schema.GroupVersionKind
}

// retiredKeys returns what the versions recorded in status guarded and pol
// does not: the recorded retired keys, and the recorded version's key for
// each recorded kind, less pol's own key and kinds.
func retiredKeys(pol *policy.Policy, status *teardownv1alpha1.TeardownPolicyStatus) []retiredKey {
	var out []retiredKey
	add := func(key string, k teardownv1alpha1.GroupVersionKind) {
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		if err != nil || key == "" {
			return
		}
		rk := retiredKey{key: key, gvk: gv.WithKind(k.Kind)}
		if rk.key == pol.Key && slices.Contains(pol.Kinds(), rk.gvk) || slices.Contains(out, rk) {
			return
		}
		out = append(out, rk)
	}
	for _, rk := range status.Retired {
		add(rk.Finalizer, rk.GroupVersionKind)
	}
	for _, k := range status.Kinds {
		add(status.Finalizer, k)
	}
	return out
}

// pruneRetired drops the retired keys that no object in scope carries any
// more. A retired key is never attached again, so once gone it stays gone.
func (r *Reconciler) pruneRetired(ctx context.Context, pol *policy.Policy, retired []retiredKey) ([]retiredKey, error) {
	var kept []retiredKey
	for _, rk := range retired {
		carried := false
		err := guarded.EachCached(ctx, r.Manager.GetCache(), rk.gvk, pol.Ref.Namespace, func(obj *metav1.PartialObjectMetadata) bool {
			carried = slices.Contains(obj.Finalizers, rk.key)
			return !carried
		})
		if err != nil {
			if isNoMatch(err) {
				continue // the kind is gone, and its objects with it
			}
			return nil, fmt.Errorf("listing %s for finalizer %s of an earlier version: %w", rk.gvk.Kind, rk.key, err)
		}
		if carried {
			kept = append(kept, rk)
		}
	}
	return kept, nil
}

func retiredOf(s *policy.Served) []retiredKey {
	var out []retiredKey
	for _, k := range s.Keys {
		if !k.Retired {
			continue
		}
		for _, gvk := range k.Kinds {
			out = append(out, retiredKey{key: k.Key, gvk: gvk})
		}
	}
	return out
}

func apiGVK(gvk schema.GroupVersionKind) teardownv1alpha1.GroupVersionKind {
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return teardownv1alpha1.GroupVersionKind{APIVersion: apiVersion, Kind: kind}
}

// newServed builds what serves pol: its own key, then each retired key with
// the kinds it is retired for.
func (r *Reconciler) newServed(pol *policy.Policy, retired []retiredKey, status *teardownv1alpha1.TeardownPolicyStatus) (*policy.Served, error) {
	attach := finalizer.AttachAutomatic
	if pol.Attach == teardownv1alpha1.AttachDeclared {
		attach = finalizer.AttachDeclared
	}
	fin, err := r.finalizersFor(pol, pol.Key, attach)
	if err != nil {
		return nil, err
	}
	s := &policy.Served{Policy: pol, Keys: []policy.ServedKey{{Key: pol.Key, Kinds: pol.Kinds(), Fin: fin}}}
	if status.BoundRecordsSince != nil {
		s.BoundRecordsSince = status.BoundRecordsSince.Time
	}
	for _, rk := range retired {
		i := slices.IndexFunc(s.Keys, func(k policy.ServedKey) bool { return k.Retired && k.Key == rk.key })
		if i < 0 {
			// Never attached again: Declared.
			fin, err := r.finalizersFor(pol, rk.key, finalizer.AttachDeclared)
			if err != nil {
				return nil, err
			}
			s.Keys = append(s.Keys, policy.ServedKey{Key: rk.key, Retired: true, Fin: fin})
			i = len(s.Keys) - 1
		}
		s.Keys[i].Kinds = append(s.Keys[i].Kinds, rk.gvk)
	}
	return s, nil
}

// finalizersFor builds the finalizer that runs pol's steps under key.
func (r *Reconciler) finalizersFor(pol *policy.Policy, key string, attach finalizer.Attach) (*finalizer.Finalizers, error) {
	// The attached records name the policy (its UID): an object one policy
	// attached is never another's to clean up. Removals and progress
	// records test the step record they were decided on (steps.Guard).
	fin := finalizer.New(finalizer.ForClient(r.client, r.reader), finalizer.WithEventRecorder(r.Recorder),
		finalizer.WithAttachedBy(string(pol.UID)), finalizer.WithAttachedSealer(r.Runner.Records.Sealer()), finalizer.WithGuard(r.Runner.Guard(pol)))
	opts := []finalizer.RegisterOption{finalizer.WithAttach(attach), finalizer.WithAttemptTimeout(r.AttemptTimeout)}
	if pol.Deadline > 0 {
		expiry := finalizer.ExpiryBlock
		if pol.OnDeadline == teardownv1alpha1.DeadlineRelease {
			expiry = finalizer.ExpiryRelease
		}
		opts = append(opts, finalizer.WithDeadline(pol.Deadline, expiry))
	}
	run := finalizer.HandlerFunc(func(ctx context.Context, obj client.Object) finalizer.Result {
		return r.Runner.Run(ctx, pol, key, steps.Object{GVK: obj.GetObjectKind().GroupVersionKind(), Obj: obj})
	})
	if err := fin.Register(key, run, opts...); err != nil {
		return nil, err
	}
	return fin, nil
}
