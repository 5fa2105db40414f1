/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a RefusedError says was refused, the write label of
// teardown_finalizer_writes_refused_total.
const (
	// WriteAttach is the patch that adds a finalizer (and its attached
	// record): refused, the object is not guarded.
	WriteAttach = "attach"
	// WriteProgress is the progress record of a cleanup under way: refused,
	// the deletion stays held but nothing on the object says why.
	WriteProgress = "progress"
)

// Event reasons of refused writes.
const (
	// ReasonAttachRefused: the finalizer could not be added; a deletion
	// will not wait for the cleanup.
	ReasonAttachRefused = "AttachRefused"
	// ReasonProgressRefused: the cleanup's progress could not be recorded
	// on the object being deleted, which stays held.
	ReasonProgressRefused = "ProgressRefused"
)

// RefusedError is a write the API server refused for good: it understood
// the request and will not store the object so changed, as the object is
// now (its annotations leave no room for the record under the API server's
// 256 KiB total, or the object would exceed what storage takes). Writing
// it again unchanged fails again; only a change to the object (by whoever
// filled it) lets it through.
type RefusedError struct {
	// Write is what was refused: WriteAttach or WriteProgress.
	Write string
	// Object names the object.
	Object string
	Err    error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the API server refused the %s write on %s: %v", e.Write, e.Object, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// IsRefused reports whether err holds a RefusedError.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// Refused reports whether err, an API server's answer to a write, refuses
// that write for good, rather than saying it raced another (a guarded
// patch's failed test, a conflict) or that the server was away:
//
//   - 422 Invalid that names the fields at fault (validation, such as
//     metadata.annotations: Too long). A guarded patch's failed test is a
//     422 too, but names no field;
//   - 413 Request Entity Too Large;
//   - the storage's "request is too large" (an object past etcd's limit),
//     which the API server passes on as a 500.
func Refused(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	switch {
	case s.Reason == metav1.StatusReasonRequestEntityTooLarge:
		return true
	case s.Reason == metav1.StatusReasonInvalid:
		if s.Details == nil {
			return false
		}
		for _, c := range s.Details.Causes {
			if c.Type != metav1.CauseTypeUnexpectedServerResponse {
				return true
			}
		}
		return false
	case s.Reason == metav1.StatusReasonInternalError || s.Code >= 500:
		return strings.Contains(s.Message, "request is too large") || strings.Contains(s.Message, "message larger than max")
	}
	return false
}

// maxRefusalMessage bounds RefusalMessage.
const maxRefusalMessage = 256

// RefusalMessage says in one short line why the API server refused a write
// (what Refused accepts): the fields at fault and what is wrong with them
// when it names them, else its message, cut to 256 bytes.
func RefusalMessage(err error) string {
	msg := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		msg = s.Message
		if s.Details != nil && len(s.Details.Causes) > 0 {
			parts := make([]string, 0, len(s.Details.Causes))
			for _, c := range s.Details.Causes {
				if c.Field != "" {
					parts = append(parts, c.Field+": "+c.Message)
				} else {
					parts = append(parts, c.Message)
				}
			}
			msg = strings.Join(parts, "; ")
		}
	}
	if len(msg) > maxRefusalMessage {
		msg = strings.ToValidUTF8(msg[:maxRefusalMessage], "") + "…"
	}
	return msg
}
