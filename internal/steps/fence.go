/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/lease"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// A cleanup's writes prove themselves against the step record on the object
// (docs/controller.md, "A resumed replica"): every record write, progress
// record and removal of the key tests, in the same patch, that the record
// is still the one the writer read, and a writer that finds a record
// written by a newer leader (a higher epoch), or by a newer version of its
// policy under the same leader (a higher generation), writes nothing. So a
// replica resumed after a pause past its lease can neither remove a key on
// what a superseded version answered nor move a record back from where the
// newer leader took it; its lease.Gate has usually refused the write
// before it was sent.

// ahead reports whether rec, a record written for the object, was written by
// a newer writer than epoch and pol: a newer leader of the same Lease, or the
// same leader serving a newer version of the same policy. Leaderships of
// another Lease (one deleted and created again) or of none (a replica
// without leader election) are not ordered: their records are never ahead.
func ahead(rec record, epoch lease.Epoch, pol *policy.Policy) bool {
	written := rec.epoch()
	if epoch.Before(written) {
		return true
	}
	return written == epoch && rec.Policy == pol.UID && rec.Generation > pol.Generation
}

// superseded is the error of a write refused because the record is ahead.
func superseded(rec record, epoch lease.Epoch, pol *policy.Policy) error {
	return fmt.Errorf("%w: the step record was written by epoch %d, generation %d of policy %s; this writer is epoch %d, generation %d of policy %s",
		finalizer.ErrSuperseded, rec.Epoch, rec.Generation, rec.Policy, epoch.Transitions, pol.Generation, pol.UID)
}

// Guard returns the finalizer.Guard of pol's cleanups: their removals and
// progress records test key's step record as read, and are not made when it
// is ahead of this writer.
func (r *Runner) Guard(pol *policy.Policy) finalizer.Guard {
	return &fence{r: r, pol: pol}
}

type fence struct {
	r   *Runner
	pol *policy.Policy
}

func (f *fence) Tests(obj client.Object, key string) ([]finalizer.Test, error) {
	return f.r.recordTests(obj, f.pol, key)
}

// recordTests refuses when key's record on obj is ahead of this writer, and
// otherwise returns the test that the record is still what obj holds.
func (r *Runner) recordTests(obj client.Object, pol *policy.Policy, key string) ([]finalizer.Test, error) {
	epoch := r.Lease.Epoch()
	if rec, ok := r.Records.bound(obj, key); ok && ahead(rec, epoch, pol) {
		return nil, superseded(rec, epoch, pol)
	}
	return []finalizer.Test{recordTest(obj, key)}, nil
}

// recordTest tests key's step record as obj holds it: its value, or its
// absence (JSON null matches a missing member; a missing annotation map
// is tested missing itself).
func recordTest(obj client.Object, key string) finalizer.Test {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		return finalizer.Test{Path: "/metadata/annotations"}
	}
	t := finalizer.Test{Path: "/metadata/annotations/" + pointerEscaper.Replace(StateAnnotation(key))}
	if v, ok := annotations[StateAnnotation(key)]; ok {
		t.Value = v
	}
	return t
}

// pointerEscaper escapes a JSON Pointer reference token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// errRecordChanged says a record write's test failed: the record is no
// longer what the cleanup read. The cleanup stops and starts again from
// the object as it is.
var errRecordChanged = fmt.Errorf("the step record changed since it was read")

// errRecordRefused says the API server refused a record write for good
// (finalizer.Refused): most often the object has no room for it.
var errRecordRefused = fmt.Errorf("the API server refused the step record")

// writeRecord writes rec as key's record on t.Obj with a JSON patch that
// tests the object's UID and the record as read (recordTests), so a record
// never replaces one it did not read: it never moves back from where
// another writer took it. A refused test is errRecordChanged; a record
// ahead of this writer, superseded.
func (r *Runner) writeRecord(ctx context.Context, pol *policy.Policy, key string, t Object, rec record) error {
	tests, err := r.recordTests(t.Obj, pol, key)
	if err != nil {
		return err
	}
	value, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	ops := []op{{Op: "test", Path: "/metadata/uid", Value: string(t.Obj.GetUID())}}
	for _, test := range tests {
		ops = append(ops, op{Op: "test", Path: test.Path, Value: test.Value})
	}
	if t.Obj.GetAnnotations() == nil {
		ops = append(ops, op{Op: "add", Path: "/metadata/annotations", Value: map[string]string{StateAnnotation(key): string(value)}})
	} else {
		ops = append(ops, op{Op: "add", Path: "/metadata/annotations/" + pointerEscaper.Replace(StateAnnotation(key)), Value: string(value)})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	err = r.Client.Patch(ctx, t.Obj, client.RawPatch(types.JSONPatchType, patch))
	if finalizer.Refused(err) {
		return fmt.Errorf("%w: %w", errRecordRefused, err)
	}
	if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %w", errRecordChanged, err)
	}
	return err
}
