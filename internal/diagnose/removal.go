/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Causes of this family (see report.go).
const (
	CauseRemovalRejected = "RemovalRejected" // B3
)

// removalPatch is the test-guarded JSON patch that removes the finalizer at
// index i, exactly what release applies.
func removalPatch(index int, fin string) ([]byte, error) {
	return json.Marshal([]map[string]any{
		{"op": "test", "path": fmt.Sprintf("/metadata/finalizers/%d", index), "value": fin},
		{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", index)},
	})
}

// dryRunRemoval sends the removal patch with dryRun=All. Nil when the check
// could not be made (no permission to patch, object gone).
func (e *Explainer) dryRunRemoval(ctx context.Context, gvr schema.GroupVersionResource, obj metav1.Object, index int, fin string) *RemovalCheck {
	patch, err := removalPatch(index, fin)
	if err != nil {
		return nil
	}
	opts := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	r := e.c.dyn.Resource(gvr)
	if obj.GetNamespace() != "" {
		_, err = r.Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.JSONPatchType, patch, opts)
	} else {
		_, err = r.Patch(ctx, obj.GetName(), types.JSONPatchType, patch, opts)
	}
	switch {
	case err == nil:
		return &RemovalCheck{Allowed: true}
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "admission webhook"), apierrors.IsConflict(err), apierrors.IsInvalid(err) && strings.Contains(err.Error(), "test operation"):
		return nil
	case strings.Contains(err.Error(), "does not support dry run"):
		return &RemovalCheck{Allowed: true, Error: "not checked: " + err.Error()}
	default:
		return &RemovalCheck{Allowed: false, Error: err.Error()}
	}
}
