/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// Causes of this family (see report.go).
const (
	CauseRemovalRejected = "RemovalRejected" // B3
)

// dryRunReason is the reason explain's dry-run records in release's
// annotation (the dry-run writes nothing).
const dryRunReason = "kubectl teardown explain: dry-run of the removal"

// dryRunRemoval sends, with dryRun=All, the patch `kubectl teardown
// release` would apply (record.RemovalPatch, with the release record that
// lets the admission policy protecting Teardown's finalizers judge it as it
// will judge the release), less its resourceVersion test: that only pins the
// version release showed evidence for, and would turn any status update
// since explain read the object into "not checked". Nil when the check
// could not be made (no permission to patch, object gone or changed) or
// was not asked for (WithoutRemovalDryRun).
func (e *Explainer) dryRunRemoval(ctx context.Context, gvr schema.GroupVersionResource, obj metav1.Object, index int, fin string) *RemovalCheck {
	if e.skipDryRun {
		return nil
	}
	patch, err := record.RemovalPatch(obj, record.Removal{Finalizer: fin, Index: index, Group: gvr.Group, KeepAttached: true, Released: record.ReleasedDryRun(fin, dryRunReason)})
	if err != nil {
		return nil
	}
	err = e.c.DryRunRemoval(ctx, gvr, obj.GetNamespace(), obj.GetName(), patch)
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
