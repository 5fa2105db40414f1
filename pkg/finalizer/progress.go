/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProgressAnnotationPrefix starts the annotation in which each finalizer
// records its cleanup's progress on the object, for people and for
// `kubectl teardown`. One annotation per finalizer, so two controllers never
// overwrite each other's record.
const ProgressAnnotationPrefix = "progress.finalizer.teardown.dev/"

// maxProgressMessage keeps the annotation short: it is read on every list.
const maxProgressMessage = 256

// Progress is the record kept in a finalizer's progress annotation.
type Progress struct {
	Finalizer string `json:"finalizer"`
	// State is the last handler answer, or Released when the finalizer was
	// removed without its cleanup.
	State State `json:"state"`
	// Message is the handler's reason or error, truncated.
	Message  string `json:"message,omitempty"`
	Attempts int    `json:"attempts"`
	// Updated is when this record was written.
	Updated time.Time `json:"updated"`
	// DeadlineExceeded is set once the finalizer's deadline passed.
	DeadlineExceeded bool `json:"deadlineExceeded,omitempty"`
	// NextAttempt is when a Pending handler asked to be checked again.
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
}

// waitBeforeNextAttempt is how long until a pending record's next attempt;
// zero when it is due or the record is not pending.
func (p Progress) waitBeforeNextAttempt(now time.Time) time.Duration {
	if p.State != StatePending || p.NextAttempt == nil {
		return 0
	}
	return p.NextAttempt.Sub(now)
}

// AttachedAnnotationPrefix starts the annotation that Finalizers writes, in
// the same patch, beside every finalizer it attaches automatically. It is
// how a controller tells a key it attached from the same key put there by a
// manifest or by another controller: Attached reports it, and only such
// keys are ever released from objects the controller stopped selecting.
const AttachedAnnotationPrefix = "attached.finalizer.teardown.dev/"

// attachedValue is the attached annotation's value; only its presence
// matters.
const attachedValue = "true"

// AttachedAnnotation returns the attached annotation's key for finalizer.
func AttachedAnnotation(finalizer string) string {
	return AttachedAnnotationPrefix + annotationName(finalizer)
}

// Attached reports whether obj records that finalizer was attached by
// Finalizers (with AttachAutomatic). Anyone who may patch obj can write
// the annotation; believing it lets them do no more than they could do by
// removing the finalizer themselves.
func Attached(obj metav1.Object, finalizer string) bool {
	_, ok := obj.GetAnnotations()[AttachedAnnotation(finalizer)]
	return ok
}

// ProgressAnnotation returns the annotation key for finalizer. Its name part
// is the finalizer with "/" as "_", or a hash when that is longer than an
// annotation name may be.
func ProgressAnnotation(finalizer string) string {
	return ProgressAnnotationPrefix + annotationName(finalizer)
}

// annotationName turns a finalizer into an annotation's name part.
func annotationName(finalizer string) string {
	name := strings.ReplaceAll(finalizer, "/", "_")
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(finalizer))
		name = name[:46] + "-" + hex.EncodeToString(sum[:8])
	}
	return name
}

// ReadProgress returns the progress records on obj, ordered by finalizer.
// Records that do not parse are skipped.
func ReadProgress(obj metav1.Object) []Progress {
	var out []Progress
	for k, v := range obj.GetAnnotations() {
		if !strings.HasPrefix(k, ProgressAnnotationPrefix) {
			continue
		}
		var p Progress
		if json.Unmarshal([]byte(v), &p) == nil && p.Finalizer != "" {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Finalizer < out[j].Finalizer })
	return out
}

func readOneProgress(obj metav1.Object, finalizer string) (Progress, bool) {
	v, ok := obj.GetAnnotations()[ProgressAnnotation(finalizer)]
	if !ok {
		return Progress{}, false
	}
	var p Progress
	if json.Unmarshal([]byte(v), &p) != nil {
		return Progress{}, false
	}
	return p, true
}

// progressPatch is a merge patch that sets only this finalizer's annotation,
// so other annotations and other finalizers' records are left alone.
func progressPatch(p Progress) ([]byte, error) {
	if len(p.Message) > maxProgressMessage {
		// Cut on a character boundary: a split one would be stored as U+FFFD.
		p.Message = strings.ToValidUTF8(p.Message[:maxProgressMessage-3], "") + "..."
	}
	value, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]string{ProgressAnnotation(p.Finalizer): string(value)},
		},
	})
}
