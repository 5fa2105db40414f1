/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package record names and reads the records a Teardown finalizer keeps on
// the objects it guards: the progress annotation of each cleanup and the
// annotation beside a finalizer attached automatically.
//
// It depends only on k8s.io/apimachinery, so read-only tools (kubectl
// teardown) can read the records without linking controller-runtime and
// Prometheus, which package finalizer needs to write them. Package finalizer
// re-exports everything here under the same names; controllers should keep
// using those.
package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is what a handler says about its cleanup.
type State string

const (
	// StateDone means the cleanup is complete: the finalizer is removed.
	StateDone State = "Done"
	// StatePending means the cleanup is under way: the finalizer stays and the
	// object is checked again later.
	StatePending State = "Pending"
	// StateRetry means the attempt failed: the finalizer stays and the attempt is
	// retried with backoff.
	StateRetry State = "Retry"
	// StateRelease means the handler gives up on purpose: the finalizer is
	// removed without the cleanup, and the reason is recorded.
	StateRelease State = "Release"
)

// ReasonFinalizerReleased is the Event reason of a finalizer removed without
// its cleanup, by its controller (a Release or a deadline) or by `kubectl
// teardown release`.
const ReasonFinalizerReleased = "FinalizerReleased"

// ProgressAnnotationPrefix starts the annotation in which each finalizer
// records its cleanup's progress on the object, for people and for
// `kubectl teardown`. One annotation per finalizer, so two controllers never
// overwrite each other's record.
const ProgressAnnotationPrefix = "progress.finalizer.teardown.dev/"

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

// AttachedAnnotationPrefix starts the annotation that package finalizer
// writes, in the same patch, beside every finalizer it attaches
// automatically. It is how a controller tells a key it attached from the
// same key put there by a manifest or by another controller.
//
// Its value is the UID of the object it was written for. Nobody knows an
// object's UID before it is created, and a restored backup or a copy of the
// object gets a new one, so a record whose value is this object's UID was
// written by someone who had read this object: the controller (or whoever
// may also patch the object directly, which the admission policy
// teardown-protect-records refuses to anyone else). Any other value ("true"
// from earlier versions, AttachedAtCreate from the attach-at-create webhook,
// or a forgery written at CREATE) is an unproven claim.
const AttachedAnnotationPrefix = "attached.finalizer.teardown.dev/"

// AttachedAtCreate is the attached record the attach-at-create webhook
// writes: the UID is not assigned yet when a mutating webhook sees a
// CREATE. The controller binds it to the UID once it sees the object
// selected; until then it proves nothing.
const AttachedAtCreate = "at-create"

// maxAttachedValue bounds what is compared: a UID is 36 bytes, and who
// attached it as many again.
const maxAttachedValue = 128

// AttachedAnnotation returns the attached annotation's key for finalizer.
func AttachedAnnotation(finalizer string) string {
	return annotationNames.of(finalizer).attached
}

// Attached reports whether obj carries an attached record for finalizer
// that is bound to obj itself (its value is obj's UID, optionally followed
// by "/" and who attached it): proof that the key was attached to this
// object by its controller.
func Attached(obj metav1.Object, finalizer string) bool {
	_, ok := AttachedBy(obj, finalizer)
	return ok
}

// AttachedBy returns who attached finalizer to obj, from an attached
// record bound to obj ("" when the record names no one), and whether there
// is such a record.
//
// A record a cache shared (ShareAttached) is read as bound: it was bound
// to this object when the cache received it.
func AttachedBy(obj metav1.Object, finalizer string) (string, bool) {
	v, ok := obj.GetAnnotations()[AttachedAnnotation(finalizer)]
	if !ok {
		return "", false
	}
	if by, shared := sharedAttached.is(v); shared {
		return by, true
	}
	return boundBy(v, string(obj.GetUID()))
}

// MarkedAttached reports whether obj carries an attached record for
// finalizer at all, bound or not. Only enough to undo the claim (release
// the key from an object not being deleted), never to act on the object.
func MarkedAttached(obj metav1.Object, finalizer string) bool {
	_, ok := obj.GetAnnotations()[AttachedAnnotation(finalizer)]
	return ok
}

// ProgressAnnotation returns the annotation key for finalizer. Its name part
// is the finalizer with "/" as "_", or a hash when that is longer than an
// annotation name may be.
func ProgressAnnotation(finalizer string) string {
	return annotationNames.of(finalizer).progress
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

// ReadOne returns finalizer's progress record on obj, and whether there is
// one that parses.
func ReadOne(obj metav1.Object, finalizer string) (Progress, bool) {
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
