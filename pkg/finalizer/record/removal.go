/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReleasedAnnotation records on an object a finalizer removed without its
// cleanup by `kubectl teardown release`, written in the same patch as the
// removal: the admission policy protecting Teardown's finalizers lets a
// removal through when it names the key (config/admission).
const ReleasedAnnotation = "teardown.dev/released-finalizer"

// rbacGroup is the API group of Roles, ClusterRoles and their bindings.
const rbacGroup = "rbac.authorization.k8s.io"

// Removal is one guarded removal of a metadata finalizer from an object as
// it was read.
type Removal struct {
	// Finalizer is the key to remove, at Index in metadata.finalizers.
	Finalizer string
	Index     int
	// Group is the object's API group: on RBAC kinds the attached record
	// stays (see RemovalPatch).
	Group string
	// KeepAttached keeps the attached record: set by every caller but the
	// controller, as teardown-protect-records refuses anyone else's change
	// to Teardown's records (config/admission/protect_records.yaml).
	KeepAttached bool
	// ResourceVersion, when set, applies the patch only to the object
	// exactly as read: release removes what its evidence was about, or
	// nothing.
	ResourceVersion string
	// Released, when set, is written to ReleasedAnnotation in the same
	// patch (release's record of who removed the key, and why).
	Released string
	// Tests are more values of the object as read that the removal
	// depends on (a writer's fence: the record its decision was made on).
	// The JSON patch tests each; StrategicRemovalPatch, pinned to the
	// resourceVersion read, holds them all.
	Tests []Test
}

// Test is one RFC 6902 test of a removal: the value at Path (a JSON
// pointer), as read; nil tests that the member is absent.
type Test struct {
	Path  string
	Value any
}

// patchOp is one RFC 6902 operation. Value is a pointer-free any so that an
// explicit JSON null can be tested.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// RemovalPatch is the one JSON patch that removes a finalizer, for the
// library (pkg/finalizer), `kubectl teardown release` and explain's
// dry-run alike, so that what explain dry-runs is what release applies
// (the library sends StrategicRemovalPatch instead where it can: a
// built-in kind being deleted). Its
// guards make it fail rather than act on another state of the object:
//
//   - metadata.uid is tested: an object deleted and recreated under the
//     same name is another object;
//   - on an object that was not being deleted, deletionTimestamp is tested
//     null: deletion starting meanwhile makes the patch fail, so a removal
//     meant for a live object never skips the cleanup of a deleted one;
//   - with ResourceVersion, the whole object is tested unchanged;
//   - the entry at Index is tested to be Finalizer: a concurrent change
//     shifts or removes it, and the patch fails instead of removing
//     someone else's finalizer;
//   - each of Tests is tested.
//
// The finalizer's attached record goes in the same patch, so that it never
// vouches for the same key put there later by someone else; not with
// KeepAttached (the caller is not the controller, see Removal), and not on
// RBAC kinds, where the escalation check would refuse the whole removal
// (they carry no record: the library does not write one there). Released
// is added last; an absent annotation map is tested absent and created
// whole.
func RemovalPatch(obj metav1.Object, r Removal) ([]byte, error) {
	if err := r.checkIndex(obj); err != nil {
		return nil, err
	}
	path := "/metadata/finalizers/" + strconv.Itoa(r.Index)
	var ops []patchOp
	if uid := obj.GetUID(); uid != "" {
		ops = append(ops, patchOp{Op: "test", Path: "/metadata/uid", Value: string(uid)})
	}
	if r.ResourceVersion != "" {
		ops = append(ops, patchOp{Op: "test", Path: "/metadata/resourceVersion", Value: r.ResourceVersion})
	}
	if obj.GetDeletionTimestamp() == nil {
		ops = append(ops, patchOp{Op: "test", Path: "/metadata/deletionTimestamp", Value: nil})
	}
	for _, t := range r.Tests {
		ops = append(ops, patchOp{Op: "test", Path: t.Path, Value: t.Value})
	}
	ops = append(ops,
		patchOp{Op: "test", Path: path, Value: r.Finalizer},
		patchOp{Op: "remove", Path: path})
	annotations := obj.GetAnnotations()
	if r.removesAttached(obj) {
		// The seal goes with it. A cached object may not show it (the
		// cache drops a seal it proved, ShareAttachedProven): added, then
		// removed, whether the API server holds one or not.
		seal := "/metadata/annotations/" + escapePointer(SealAnnotation(r.Finalizer))
		ops = append(ops,
			patchOp{Op: "remove", Path: "/metadata/annotations/" + escapePointer(AttachedAnnotation(r.Finalizer))},
			patchOp{Op: "add", Path: seal, Value: ""},
			patchOp{Op: "remove", Path: seal})
	}
	if r.Released != "" {
		if annotations == nil {
			ops = append(ops,
				patchOp{Op: "test", Path: "/metadata/annotations", Value: nil},
				patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{ReleasedAnnotation: r.Released}})
		} else {
			ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(ReleasedAnnotation), Value: r.Released})
		}
	}
	return json.Marshal(ops)
}

// checkIndex reports an error unless r.Finalizer is at r.Index of obj's
// finalizers: both removal patches are built for the entry the caller saw.
func (r Removal) checkIndex(obj metav1.Object) error {
	fins := obj.GetFinalizers()
	if r.Index < 0 || r.Index >= len(fins) || fins[r.Index] != r.Finalizer {
		return fmt.Errorf("finalizer %q is not at index %d of %v", r.Finalizer, r.Index, fins)
	}
	return nil
}

// removesAttached reports whether the removal takes the finalizer's
// attached record off too: when obj carries one, unless the caller keeps it
// (KeepAttached) or the kind is an RBAC one (see RemovalPatch).
func (r Removal) removesAttached(obj metav1.Object) bool {
	_, ok := obj.GetAnnotations()[AttachedAnnotation(r.Finalizer)]
	return ok && !r.KeepAttached && r.Group != rbacGroup
}

// ReleasedDryRun is the ReleasedAnnotation value of a dry-run: like the
// real record it names the finalizer, so that the admission policy
// protecting Teardown's finalizers judges the dry-run as it will judge the
// write.
func ReleasedDryRun(finalizer, reason string) string {
	v, _ := json.Marshal(map[string]string{"dryRun": "true", "finalizer": finalizer, "reason": reason})
	return string(v)
}

// escapePointer escapes a JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return pointerEscaper.Replace(s)
}

// pointerEscaper is built once: a Replacer is safe for concurrent use, and
// building one per removal patch was 1% of the controller's CPU.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
