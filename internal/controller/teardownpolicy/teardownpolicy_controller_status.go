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

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
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
	for _, k := range s.Keys {
		for _, gvk := range k.Kinds {
			err := guarded.EachCached(ctx, r.Manager.GetCache(), gvk, s.Policy.Ref.Namespace, func(obj *metav1.PartialObjectMetadata) bool {
				if !slices.Contains(obj.Finalizers, k.Key) {
					return true
				}
				status.Guarded++
				if obj.DeletionTimestamp == nil {
					return true
				}
				status.Terminating++
				if b, failure, ok := blockedOn(s.Policy, k.Key, gvk, obj, now); ok {
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
	return nil
}

// blockedOn says what a terminating object's cleanup under key waits on,
// from the progress and step records the cleanup keeps on it, and the
// failure when its last attempt failed. An object without a record has not
// been attempted yet, or finished at its first attempt.
func blockedOn(pol *policy.Policy, key string, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, now time.Time) (teardownv1alpha1.BlockedObject, *teardownv1alpha1.StepFailure, bool) {
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
	pos := steps.Resume(obj, pol, key, now)
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
