/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	"strings"

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

// sealSeparator separates a sealed attached record's seal from the rest:
// "<object UID>/<who attached it>#<seal>".
const sealSeparator = "#"

// AttachedValue returns the attached record of finalizer bound to the
// object of uid and naming by, sealed by s (nil: not sealed). Who attached
// it (by) must not hold '#'.
func AttachedValue(finalizer, uid, by string, s Sealer) string {
	v := uid
	if by != "" {
		v += "/" + by
	}
	if s != nil {
		v += sealSeparator + s.Seal(AttachedAnnotation(finalizer), uid, by)
	}
	return v
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
// to obj (or shared by a cache), sealed or not.
func ReadAttached(obj metav1.Object, finalizer string) (AttachedRecord, bool) {
	v, ok := obj.GetAnnotations()[AttachedAnnotation(finalizer)]
	if !ok {
		return AttachedRecord{}, false
	}
	if by, shared := sharedAttached.is(v); shared {
		return AttachedRecord{By: by, Shared: true}, true
	}
	return readBound(v, string(obj.GetUID()))
}

// SealChecks reports whether rec, the attached record in annotation
// (AttachedAnnotation) bound to the object of uid, carries a seal s
// checks. A shared record counts as checked: the cache that shared it
// proved it.
func (rec AttachedRecord) SealChecks(s Sealer, annotation, uid string) bool {
	return rec.Shared || s != nil && rec.Seal != "" && s.Verify(rec.Seal, annotation, uid, rec.By)
}

// readBound reads a record's value as it comes from the API server: bound
// when it is uid, optionally followed by "/" and who attached it, then
// optionally by "#" and its seal.
func readBound(v, uid string) (AttachedRecord, bool) {
	if uid == "" || len(v) > maxAttachedValue {
		return AttachedRecord{}, false
	}
	rest, ok := strings.CutPrefix(v, uid)
	if !ok {
		return AttachedRecord{}, false
	}
	rest, seal, sealed := strings.Cut(rest, sealSeparator)
	if sealed && seal == "" {
		return AttachedRecord{}, false
	}
	switch {
	case rest == "":
		return AttachedRecord{Seal: seal}, true
	case rest[0] == '/':
		return AttachedRecord{By: rest[1:], Seal: seal}, true
	}
	return AttachedRecord{}, false
}
