/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// rbacGroup is the API group of Roles, ClusterRoles and their bindings.
const rbacGroup = "rbac.authorization.k8s.io"

// maxPatchAttempts bounds the re-read-and-retry loop when a guarded patch's
// test fails because someone else changed the finalizer list meanwhile.
const maxPatchAttempts = 5

// ErrBeingDeleted is returned by Add when the object is being deleted: the API
// server refuses new finalizers then, and adding one would guard nothing.
var ErrBeingDeleted = errors.New("object is being deleted; no finalizer can be added")

// jsonPatchOp is one RFC 6902 operation. Value is a pointer-free any so that
// an explicit JSON null can be tested.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// addPatch appends names to the finalizer list, guarded by a test of the
// whole current list (or of its absence), so a concurrent change makes the
// patch fail instead of being overwritten. With marked, the same patch
// records each name's attached annotation, so no object ever carries a
// finalizer we attached without the record saying so.
func addPatch(obj client.Object, names []string, by *attacher) ([]byte, error) {
	ops := uidTest(obj)
	if by != nil {
		ops = append(ops, attachedOps(obj, names, *by)...)
	}
	current := obj.GetFinalizers()
	if len(current) == 0 {
		// A missing list cannot be appended to; test that it is missing (JSON
		// null matches an absent member) and create it.
		ops = append(ops,
			jsonPatchOp{Op: "test", Path: "/metadata/finalizers", Value: nil},
			jsonPatchOp{Op: "add", Path: "/metadata/finalizers", Value: names})
	} else {
		ops = append(ops, jsonPatchOp{Op: "test", Path: "/metadata/finalizers", Value: current})
		for _, n := range names {
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/finalizers/-", Value: n})
		}
	}
	return json.Marshal(ops)
}

// removePatch removes the entry at index i with record.RemovalPatch, the
// guarded removal `kubectl teardown release` applies and explain dry-runs
// too: the uid and the entry are tested, deletionTimestamp is tested null on
// a live object, tests (a Guard's) are tested, and the attached record goes
// in the same patch. From a
// built-in kind being deleted (unless strategic is false) it is
// record.StrategicRemovalPatch: the same removal, pinned to the
// resourceVersion read, which the API server applies without encoding the
// object as JSON.
func removePatch(obj client.Object, i int, name string, strategic bool, tests []Test) (types.PatchType, []byte, error) {
	r := record.Removal{Finalizer: name, Index: i, Group: obj.GetObjectKind().GroupVersionKind().Group, Tests: tests}
	if strategic && builtIn(obj) {
		data, ok, err := record.StrategicRemovalPatch(obj, r)
		if err != nil || ok {
			return types.StrategicMergePatchType, data, err
		}
	}
	data, err := record.RemovalPatch(obj, r)
	return types.JSONPatchType, data, err
}

// builtIn reports whether obj's kind is one of Kubernetes' own, which take
// strategic merge patches; custom resources do not. An object whose kind is
// not set (typed objects often read so) is not.
func builtIn(obj client.Object) bool {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return gvk.Kind != "" && clientgoscheme.Scheme.Recognizes(gvk)
}

// attacher is who attaches keys, named in their attached records, and
// what seals those records (nil: not sealed).
type attacher struct {
	by     string
	sealer Sealer
}

// attachedOps set the attached annotation of each name, and its seal
// annotation when by has a sealer. An absent annotation map is tested
// absent and created whole; a present one gets members added (add
// replaces a member that exists).
func attachedOps(obj client.Object, names []string, by attacher) []jsonPatchOp {
	// The record is bound to this object: its value is the UID, which the
	// patch's uid test pins, and who attached it.
	uid := string(obj.GetUID())
	value := uid
	if by.by != "" {
		value += "/" + by.by
	}
	records := map[string]string{}
	for _, n := range names {
		records[AttachedAnnotation(n)] = value
		if by.sealer != nil {
			records[SealAnnotation(n)] = record.AttachedSeal(n, uid, by.by, by.sealer)
		}
	}
	if obj.GetAnnotations() == nil {
		return []jsonPatchOp{
			{Op: "test", Path: "/metadata/annotations", Value: nil},
			{Op: "add", Path: "/metadata/annotations", Value: records},
		}
	}
	var ops []jsonPatchOp
	for _, k := range slices.Sorted(maps.Keys(records)) {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(k), Value: records[k]})
	}
	return ops
}

// escapePointer escapes a JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return pointerEscaper.Replace(s)
}

// pointerEscaper is built once (a Replacer is safe for concurrent use), not
// per attach patch.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// uidTest pins the patch to this incarnation of the object: one deleted and
// recreated under the same name is another object.
func uidTest(obj client.Object) []jsonPatchOp {
	if obj.GetUID() == "" {
		return nil
	}
	return []jsonPatchOp{{Op: "test", Path: "/metadata/uid", Value: string(obj.GetUID())}}
}

// isGuardFailure reports whether a patch failed because its test no longer
// held (422) or the object changed under it (409): re-read and try again.
// Callers check Refused first: a 422 that names fields refuses the write
// whatever the object's list is.
func isGuardFailure(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsConflict(err)
}

// Add adds names that obj does not carry yet with a guarded JSON patch,
// re-reading from the API and retrying a bounded number of times if the
// list changed meanwhile. obj is refreshed from the server's answer. It
// returns the names it added, and ErrBeingDeleted (with nothing added) if the
// object is being deleted.
func Add(ctx context.Context, c Client, obj client.Object, names ...string) ([]string, error) {
	return add(ctx, c, obj, names, nil)
}

// add is Add that, with by set, also records the attached annotations
// (naming by.by, when not empty, as who attached, sealed by by.sealer).
func add(ctx context.Context, c Client, obj client.Object, names []string, by *attacher) ([]string, error) {
	if err := checkObject(obj); err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := ValidateName(n); err != nil {
			return nil, err
		}
	}
	var lastErr error
	for range maxPatchAttempts {
		if obj.GetDeletionTimestamp() != nil {
			return nil, ErrBeingDeleted
		}
		missing := missingFrom(obj.GetFinalizers(), names)
		if len(missing) == 0 {
			return nil, nil
		}
		data, err := addPatch(obj, missing, by)
		if err != nil {
			return nil, fmt.Errorf("building patch: %w", err)
		}
		err = c.Patch(ctx, obj, types.JSONPatchType, data)
		if err == nil {
			return missing, nil
		}
		if by != nil && apierrors.IsForbidden(err) && obj.GetObjectKind().GroupVersionKind().Group == rbacGroup {
			// RBAC's escalation check lets a writer change only finalizers
			// and ownerReferences of a Role or binding that grants more than
			// it holds: guard such an object without the record (it is then
			// released only where it is still selected, or its cleanup
			// started).
			by = nil
			continue
		}
		if Refused(err) {
			// Not a race: the object cannot take the patch as it is now.
			return nil, &RefusedError{Write: WriteAttach, Object: describe(obj), Err: err}
		}
		if !isGuardFailure(err) {
			return nil, fmt.Errorf("adding finalizers %v to %s: %w", missing, describe(obj), err)
		}
		patchConflicts.WithLabelValues("add").Inc()
		lastErr = err
		if err := c.Read(ctx, obj); err != nil {
			return nil, fmt.Errorf("re-reading %s after a failed guarded patch: %w", describe(obj), err)
		}
	}
	return nil, fmt.Errorf("adding finalizers to %s: the finalizer list kept changing after %d attempts: %w", describe(obj), maxPatchAttempts, lastErr)
}

// bindAttached rewrites the attached records of names on obj, which carries
// them unbound, to obj's UID. The caller selects obj, so the keys are its
// to guard whatever wrote the record; the uid test pins the object.
func bindAttached(ctx context.Context, c Client, obj client.Object, names []string, by attacher) error {
	if len(names) == 0 || obj.GetUID() == "" {
		return nil
	}
	data, err := json.Marshal(append(uidTest(obj), attachedOps(obj, names, by)...))
	if err != nil {
		return fmt.Errorf("building patch: %w", err)
	}
	if err := c.Patch(ctx, obj, types.JSONPatchType, data); err != nil {
		if apierrors.IsForbidden(err) && obj.GetObjectKind().GroupVersionKind().Group == rbacGroup {
			return nil // as in add: RBAC objects may carry no record
		}
		return fmt.Errorf("binding the attached records of %v to %s: %w", names, describe(obj), err)
	}
	return nil
}

// Remove removes name from obj with a guarded patch (removePatch). A finalizer that is
// already absent, or an object that is gone, is success. obj is refreshed from
// the server's answer.
func Remove(ctx context.Context, c Client, obj client.Object, name string) error {
	_, err := remove(ctx, c, obj, name)
	return err
}

// remove is Remove that also says whether this call removed the finalizer,
// rather than finding it gone.
func remove(ctx context.Context, c Client, obj client.Object, name string) (bool, error) {
	return removeIf(ctx, c, obj, name, nil, nil)
}

// removeIf is remove that removes only while still(obj) holds, checked
// again on every re-read: a decision made on one state of the object is
// not applied to another. With guard, each attempt carries its tests, and
// its error stops the removal.
func removeIf(ctx context.Context, c Client, obj client.Object, name string, still func(client.Object) bool, guard Guard) (bool, error) {
	if err := checkObject(obj); err != nil {
		return false, err
	}
	uid := obj.GetUID()
	var lastErr error
	strategic := true
	for range maxPatchAttempts {
		if uid != "" && obj.GetUID() != uid {
			// The object we were finalizing is gone and another took its
			// name; its finalizers are not ours to touch.
			return false, nil
		}
		i := slices.Index(obj.GetFinalizers(), name)
		if i < 0 || still != nil && !still(obj) {
			return false, nil
		}
		tests, err := guardTests(guard, obj, name)
		if err != nil {
			return false, fmt.Errorf("removing finalizer %q from %s: %w", name, describe(obj), err)
		}
		pt, data, err := removePatch(obj, i, name, strategic, tests)
		if err != nil {
			return false, fmt.Errorf("building patch: %w", err)
		}
		err = c.Patch(ctx, obj, pt, data)
		switch {
		case err == nil:
			return true, nil
		case pt == types.StrategicMergePatchType && apierrors.IsUnsupportedMediaType(err):
			// A kind served by another API server may refuse it.
			strategic = false
			continue
		case apierrors.IsNotFound(err):
			obj.SetFinalizers(slices.Delete(slices.Clone(obj.GetFinalizers()), i, i+1))
			return false, nil
		case !isGuardFailure(err):
			return false, fmt.Errorf("removing finalizer %q from %s: %w", name, describe(obj), err)
		}
		patchConflicts.WithLabelValues("remove").Inc()
		lastErr = err
		// The strategic patch is pinned to the whole object: on one that
		// others keep writing (a Pod's status while it terminates) it could
		// fail every attempt where the JSON patch, which tests only the
		// entry, goes through. Once refused, the rest of the attempts are
		// the JSON patch's, as before it.
		strategic = false
		if err := c.Read(ctx, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("re-reading %s after a failed guarded patch: %w", describe(obj), err)
		}
	}
	return false, fmt.Errorf("removing finalizer %q from %s: the finalizer list kept changing after %d attempts: %w", name, describe(obj), maxPatchAttempts, lastErr)
}

func missingFrom(have, want []string) []string {
	var missing []string
	for _, w := range want {
		if !slices.Contains(have, w) && !slices.Contains(missing, w) {
			missing = append(missing, w)
		}
	}
	return missing
}
