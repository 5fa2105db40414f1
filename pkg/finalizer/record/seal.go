/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sealer seals the attached records a controller writes, so that it can
// tell its own from records anyone who may patch the object wrote, and
// checks them (finalizer.WithAttachedSealer). A keyed MAC is enough: the
// controller that seals is the one that checks.
type Sealer interface {
	// Seal returns the seal of parts: no '#', '/' or space in it.
	Seal(parts ...string) string
	// Verify reports whether seal is the seal of parts.
	Verify(seal string, parts ...string) bool
}

// SealAnnotationPrefix starts the annotation that holds the seal of the
// attached record of the same finalizer, beside it: a separate annotation,
// so that a controller of a release before seals, which reads the attached
// record's value as "<object UID>/<who attached it>", reads it the same.
const SealAnnotationPrefix = "seal.finalizer.teardown.dev/"

// SealAnnotation returns the seal annotation's key for finalizer.
func SealAnnotation(finalizer string) string {
	return annotationNames.of(finalizer).seal
}

// AttachedSeal returns the seal by s of the attached record of finalizer
// bound to the object of uid and naming by.
func AttachedSeal(finalizer, uid, by string, s Sealer) string {
	return s.Seal(AttachedAnnotation(finalizer), uid, by)
}

// AttachedRecord is an attached record bound to its object, as read.
type AttachedRecord struct {
	// By is who attached the key ("" when the record names no one).
	By string
	// Seal is the record's seal; "" when it has none.
	Seal string
	// Shared says the record is a cache's shared value
	// (ShareAttachedProven), which the cache proved when it received it.
	Shared bool
}

// ReadAttached returns finalizer's attached record on obj when it is bound
// to obj (or shared by a cache), with its seal if it has one.
func ReadAttached(obj metav1.Object, finalizer string) (AttachedRecord, bool) {
	annotations := obj.GetAnnotations()
	v, ok := annotations[AttachedAnnotation(finalizer)]
	if !ok {
		return AttachedRecord{}, false
	}
	if by, shared := sharedAttached.is(v); shared {
		return AttachedRecord{By: by, Shared: true}, true
	}
	by, ok := boundBy(v, string(obj.GetUID()))
	if !ok {
		return AttachedRecord{}, false
	}
	return AttachedRecord{By: by, Seal: annotations[SealAnnotation(finalizer)]}, true
}

// SealChecks reports whether rec, the attached record in annotation
// (AttachedAnnotation) bound to the object of uid, carries a seal s
// checks. A shared record counts as checked: the cache that shared it
// proved it.
func (rec AttachedRecord) SealChecks(s Sealer, annotation, uid string) bool {
	return rec.Shared || s != nil && rec.Seal != "" && s.Verify(rec.Seal, annotation, uid, rec.By)
}
