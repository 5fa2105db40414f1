/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// maxBlockedObjects bounds status.blockedObjects, as the CRD does.
const maxBlockedObjects = 20

// count fills the status counts from the metadata-only cache the target
// controller already keeps: no extra API calls.
func (r *Reconciler) count(ctx context.Context, s *policy.Served, status *teardownv1alpha1.TeardownPolicyStatus) error {
	status.Guarded, status.Terminating, status.Blocked = 0, 0, 0
	status.Released = int32(s.Released.Load())
	previous := status.BlockedObjects
	var blocked []teardownv1alpha1.BlockedObject
	var failures []teardownv1alpha1.StepFailure
	now := time.Now()
	// The refused objects the cache still holds; the others are gone.
	refused, present := refusedUIDs(s.Refused.List()), map[types.UID]bool{}
	for _, k := range s.Keys {
		for _, gvk := range k.Kinds {
			err := guarded.EachCached(ctx, r.Manager.GetCache(), gvk, s.Policy.Ref.Namespace, func(obj *metav1.PartialObjectMetadata) bool {
				if refused[obj.UID] {
					present[obj.UID] = true
				}
				if !slices.Contains(obj.Finalizers, k.Key) {
					return true
				}
				status.Guarded++
				if obj.DeletionTimestamp == nil {
					return true
				}
				status.Terminating++
				if b, failure, ok := r.blockedOn(s.Policy, k.Key, gvk, obj, now); ok {
					if r.Diagnoses != nil {
						b.Diagnosis = r.Diagnoses.Lookup(k.Key, obj.UID)
						if b.Diagnosis == nil && !r.Diagnoses.Judged(k.Key, obj.UID) {
							b.Diagnosis = diagnosis.RecordedDiagnosis(previous, gvk, obj)
						}
					}
					status.Blocked++
					blocked = append(blocked, b)
					if failure != nil {
						failures = append(failures, *failure)
					}
				}
				return true
			})
			if err != nil {
				return fmt.Errorf("counting %s: %w", gvk.Kind, err)
			}
		}
	}
	// The longest-blocked first: those are the ones a person looks for.
	sort.Slice(blocked, func(i, j int) bool { return blocked[i].Since.Before(&blocked[j].Since) })
	if len(blocked) > maxBlockedObjects {
		blocked = blocked[:maxBlockedObjects]
	}
	status.BlockedObjects = blocked
	// Newest first, as status.recentFailures promises.
	sort.Slice(failures, func(i, j int) bool { return failures[j].Time.Before(&failures[i].Time) })
	if len(failures) > maxBlockedObjects {
		failures = failures[:maxBlockedObjects]
	}
	status.RecentFailures = failures
	s.Refused.Keep(func(uid types.UID) bool { return !refused[uid] || present[uid] })
	status.Refused, status.RefusedObjects = refusedStatus(s.Policy, s.Refused.List())
	return nil
}

func refusedUIDs(objs []policy.RefusedObject) map[types.UID]bool {
	uids := make(map[types.UID]bool, len(objs))
	for _, o := range objs {
		uids[o.UID] = true
	}
	return uids
}

// refusedStatus is status.refused and status.refusedObjects (the first
// maxBlockedObjects) from the policy's refused objects, longest refused
// first. A TeardownPolicy's status names objects of its namespace only
// (docs/security.md, the audience rule), which are all it can select.
func refusedStatus(pol *policy.Policy, objs []policy.RefusedObject) (int32, []teardownv1alpha1.RefusedObject) {
	var n int32
	var out []teardownv1alpha1.RefusedObject
	for _, o := range objs {
		if !pol.InScope(&metav1.ObjectMeta{Namespace: o.Namespace}) {
			continue
		}
		n++
		if len(out) == maxBlockedObjects {
			continue
		}
		apiVersion, kind := o.GVK.ToAPIVersionAndKind()
		reason := teardownv1alpha1.AttachRefusedReason
		if o.Write == finalizer.WriteProgress {
			reason = teardownv1alpha1.ProgressRefusedReason
		}
		out = append(out, teardownv1alpha1.RefusedObject{
			Object:  teardownv1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: o.Namespace, Name: o.Name},
			Reason:  reason,
			Message: o.Message,
			Since:   metav1.NewTime(o.Since),
		})
	}
	return n, out
}

// blockedOn says what a terminating object's cleanup under key waits on,
// from the progress and step records the cleanup keeps on it, and the
// failure when its last attempt failed. An object without a record has not
// been attempted yet, or finished at its first attempt.
func (r *Reconciler) blockedOn(pol *policy.Policy, key string, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, now time.Time) (teardownv1alpha1.BlockedObject, *teardownv1alpha1.StepFailure, bool) {
	var progress *finalizer.Progress
	for _, p := range finalizer.ReadProgress(obj) {
		if p.Finalizer == key {
			progress = &p
		}
	}
	if progress == nil || progress.State == finalizer.StateRelease {
		return teardownv1alpha1.BlockedObject{}, nil, false
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	b := teardownv1alpha1.BlockedObject{
		Object:  teardownv1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: obj.Namespace, Name: obj.Name},
		Reason:  teardownv1alpha1.StepInProgressReason,
		Message: progress.Message,
		Since:   *obj.DeletionTimestamp,
	}
	pos := r.Runner.Records.Resume(obj, pol, key, now)
	b.Step = pos.Step
	if !pos.Since.IsZero() {
		b.Since = metav1.NewTime(pos.Since)
	}
	var failure *teardownv1alpha1.StepFailure
	switch {
	case progress.DeadlineExceeded:
		b.Reason = teardownv1alpha1.DeadlineExceededReason
	case pos.TimedOut:
		b.Reason = teardownv1alpha1.StepTimedOutReason
	case progress.State == finalizer.StateRetry:
		b.Reason = teardownv1alpha1.StepFailedReason
	}
	if b.Reason == teardownv1alpha1.StepFailedReason || b.Reason == teardownv1alpha1.StepTimedOutReason {
		failure = &teardownv1alpha1.StepFailure{Object: b.Object, Step: b.Step, Reason: b.Reason,
			Message: progress.Message, Time: metav1.NewTime(progress.Updated)}
	}
	return b, failure, true
}
