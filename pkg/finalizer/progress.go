/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// The records are named and read by package record, which depends only on
// apimachinery so that read-only tools need not link this package; they are
// re-exported here unchanged.

// ProgressAnnotationPrefix starts the annotation in which each finalizer
// records its cleanup's progress on the object, for people and for
// `kubectl teardown`. One annotation per finalizer, so two controllers never
// overwrite each other's record.
const ProgressAnnotationPrefix = record.ProgressAnnotationPrefix

// maxProgressMessage keeps the annotation short: it is read on every list.
const maxProgressMessage = 256

// Progress is the record kept in a finalizer's progress annotation.
type Progress = record.Progress

// waitBeforeNextAttempt is how long until a pending record's next attempt,
// or a failed one's that its handler timed (RetryAfter); zero when it is due
// or the record names no time.
func waitBeforeNextAttempt(p Progress, now time.Time) time.Duration {
	if p.State != StatePending && p.State != StateRetry || p.NextAttempt == nil {
		return 0
	}
	return p.NextAttempt.Sub(now)
}

// AttachedAnnotationPrefix starts the annotation that Finalizers writes, in
// the same patch, beside every finalizer it attaches automatically. It is
// how a controller tells a key it attached from the same key put there by a
// manifest or by another controller: Attached reports it, and only such
// keys are ever released from objects the controller stopped selecting.
const AttachedAnnotationPrefix = record.AttachedAnnotationPrefix

// AttachedAtCreate is the attached record written before the object has a
// UID (by an admission webhook at CREATE): an unproven claim until bound.
const AttachedAtCreate = record.AttachedAtCreate

// AttachedAnnotation returns the attached annotation's key for finalizer.
func AttachedAnnotation(finalizer string) string {
	return record.AttachedAnnotation(finalizer)
}

// Attached reports whether obj records that finalizer was attached to this
// very object by Finalizers (with AttachAutomatic): the record's value is
// obj's UID, which no one knows before the object exists and a restored
// copy does not keep. Only such a record lets a controller act on an object
// it does not select.
func Attached(obj metav1.Object, finalizer string) bool {
	return record.Attached(obj, finalizer)
}

// AttachedBy returns who attached finalizer to obj (WithAttachedBy), from
// an attached record bound to obj, and whether there is such a record.
func AttachedBy(obj metav1.Object, finalizer string) (string, bool) {
	return record.AttachedBy(obj, finalizer)
}

// MarkedAttached reports whether obj carries an attached record for
// finalizer, bound to it or not: enough to release the key from an object
// not being deleted, never to run a cleanup.
func MarkedAttached(obj metav1.Object, finalizer string) bool {
	return record.MarkedAttached(obj, finalizer)
}

// ProgressAnnotation returns the annotation key for finalizer. Its name part
// is the finalizer with "/" as "_", or a hash when that is longer than an
// annotation name may be.
func ProgressAnnotation(finalizer string) string {
	return record.ProgressAnnotation(finalizer)
}

// ReadProgress returns the progress records on obj, ordered by finalizer.
// Records that do not parse are skipped.
func ReadProgress(obj metav1.Object) []Progress {
	return record.ReadProgress(obj)
}

func readOneProgress(obj metav1.Object, finalizer string) (Progress, bool) {
	return record.ReadOne(obj, finalizer)
}

// writeProgress writes p as its finalizer's progress annotation on obj:
// progressPatch, or with a Guard progressJSONPatch, which carries the
// guard's tests.
func (f *Finalizers) writeProgress(ctx context.Context, obj client.Object, p Progress) error {
	if f.guard == nil {
		data, err := progressPatch(p)
		if err != nil {
			return err
		}
		return f.client.Patch(ctx, obj, types.MergePatchType, data)
	}
	tests, err := f.guard.Tests(obj, p.Finalizer)
	if err != nil {
		return err
	}
	data, err := progressJSONPatch(obj, p, tests)
	if err != nil {
		return err
	}
	return f.client.Patch(ctx, obj, types.JSONPatchType, data)
}

// progressValue is p as its annotation's value, its message cut short.
func progressValue(p Progress) (string, error) {
	if len(p.Message) > maxProgressMessage {
		// Cut on a character boundary: a split one would be stored as U+FFFD.
		p.Message = strings.ToValidUTF8(p.Message[:maxProgressMessage-3], "") + "..."
	}
	value, err := json.Marshal(p)
	return string(value), err
}

// progressPatch is a merge patch that sets only this finalizer's annotation,
// so other annotations and other finalizers' records are left alone.
func progressPatch(p Progress) ([]byte, error) {
	value, err := progressValue(p)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]string{ProgressAnnotation(p.Finalizer): value},
		},
	})
}

// progressJSONPatch sets the same annotation with a JSON patch that tests
// obj's UID and tests first: a record written only on the state it
// describes. An absent annotation map is tested absent and created whole.
func progressJSONPatch(obj client.Object, p Progress, tests []Test) ([]byte, error) {
	value, err := progressValue(p)
	if err != nil {
		return nil, err
	}
	ops := uidTest(obj)
	for _, t := range tests {
		ops = append(ops, jsonPatchOp{Op: "test", Path: t.Path, Value: t.Value})
	}
	key := ProgressAnnotation(p.Finalizer)
	if obj.GetAnnotations() == nil {
		ops = append(ops,
			jsonPatchOp{Op: "test", Path: "/metadata/annotations", Value: nil},
			jsonPatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{key: value}})
	} else {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(key), Value: value})
	}
	return json.Marshal(ops)
}

// ShareAttached rewrites obj's attached records bound to it into one value
// per attacher, which AttachedBy reads as bound and nobody can forge: for a
// cache transform (toolscache.TransformFunc), so that objects a controller
// attached its keys to can share their annotation maps. Never for an object
// that is written back.
func ShareAttached(obj metav1.Object) {
	record.ShareAttached(obj)
}

// Sealer seals and checks attached records (WithAttachedSealer).
type Sealer = record.Sealer

// AttachedRecord is an attached record bound to its object, as read.
type AttachedRecord = record.AttachedRecord

// ReadAttached returns finalizer's attached record on obj when it is bound
// to obj (or shared by a cache), sealed or not.
func ReadAttached(obj metav1.Object, finalizer string) (AttachedRecord, bool) {
	return record.ReadAttached(obj, finalizer)
}

// SealAnnotation returns the key of the annotation holding the seal of
// finalizer's attached record (WithAttachedSealer).
func SealAnnotation(finalizer string) string {
	return record.SealAnnotation(finalizer)
}

// ShareAttachedProven is ShareAttached for a cache whose reader checks
// seals: only the records proven says are its own are shared.
func ShareAttachedProven(obj metav1.Object, proven func(annotation string, rec AttachedRecord) bool) {
	record.ShareAttachedProven(obj, proven)
}
