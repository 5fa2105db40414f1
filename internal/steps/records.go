/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/recordseal"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// Records reads the records the controller keeps on the objects it guards
// (the step record, state.go; the attached record, pkg/finalizer) as Keys
// prove them. A zero Records (no keys) reads every record bound to its
// object as the controller's, as readers that hold no key do (tests,
// tools).
type Records struct {
	Keys *recordseal.Keyring
}

// Sealer is what the policies' Finalizers seal their attached records
// with (finalizer.WithAttachedSealer); nil without keys.
func (rs Records) Sealer() finalizer.Sealer {
	if rs.Keys == nil {
		return nil
	}
	return rs.Keys
}

// AttachedBy returns the UID of the policy that attached key to obj, from
// an attached record bound to obj that is proven (AttachedProven).
func (rs Records) AttachedBy(obj metav1.Object, key string) (types.UID, bool) {
	rec, ok := finalizer.ReadAttached(obj, key)
	if !ok || !rs.AttachedProven(obj, finalizer.AttachedAnnotation(key), rec) {
		return "", false
	}
	return types.UID(rec.By), true
}

// AttachedProven reports whether rec, the attached record in annotation
// bound to obj, is the controller's: without keys, always; with them, when
// its seal checks, or it has none and obj was created before records were
// sealed (an earlier release's record).
func (rs Records) AttachedProven(obj metav1.Object, annotation string, rec finalizer.AttachedRecord) bool {
	if rs.Keys == nil || rec.SealChecks(rs.Keys, annotation, string(obj.GetUID())) {
		return true
	}
	return rec.Seal == "" && rs.olderThanKeys(obj)
}

// olderThanKeys reports whether obj was created before records were
// sealed, or in that second (policy.CreatedUpTo): an unsealed record on it
// may be an earlier release's.
func (rs Records) olderThanKeys(obj metav1.Object) bool {
	return !rs.Keys.Since().IsZero() && policy.CreatedUpTo(obj, rs.Keys.Since())
}
