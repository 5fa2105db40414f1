/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DrainReport says what Drain did.
type DrainReport struct {
	// Scanned counts the objects listed.
	Scanned int
	// Removed lists the objects the finalizer was removed from, as
	// namespace/name (or name for cluster-scoped kinds).
	Removed []string
}

// drainPageSize bounds each list call so draining a large kind does not load
// it all at once.
const drainPageSize = 500

// Drain removes finalizer from every object of kind gvk that carries it, with
// the same guarded patches as Remove. It is the uninstall path: run it before
// removing a controller so that nothing is left stuck in Terminating. Drain
// does not run any cleanup: objects being deleted then go away at once.
// Objects are listed metadata-only, a page at a time; opts narrow the list
// (client.InNamespace, client.MatchingLabels, ...). c must read from the API
// server, like a client made with client.New: a manager's cache-backed
// client cannot page.
func Drain(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, finalizer string, opts ...client.ListOption) (DrainReport, error) {
	return DrainIf(ctx, c, gvk, finalizer, nil, opts...)
}

// DrainIf is Drain that removes finalizer only from the objects release
// approves (all of them when release is nil), for example only those not
// being deleted, or only those the controller attached it to (Attached).
// release is asked again whenever an object is re-read after a concurrent
// change, so an object that started being deleted meanwhile is judged as
// it is now.
func DrainIf(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, finalizer string, release func(*metav1.PartialObjectMetadata) bool, opts ...client.ListOption) (DrainReport, error) {
	var report DrainReport
	if err := ValidateName(finalizer); err != nil {
		return report, err
	}
	patcher := ForClient(c, nil)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	page := append(slices.Clone(opts), client.Limit(drainPageSize))
	for {
		if err := c.List(ctx, list, page...); err != nil {
			return report, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(gvk)
			report.Scanned++
			if !slices.Contains(obj.GetFinalizers(), finalizer) {
				continue
			}
			var still func(client.Object) bool
			if release != nil {
				still = func(o client.Object) bool { return release(o.(*metav1.PartialObjectMetadata)) }
			}
			removed, err := removeIf(ctx, patcher, obj, finalizer, still, nil)
			if err != nil {
				return report, err
			}
			if !removed {
				continue
			}
			report.Removed = append(report.Removed, client.ObjectKeyFromObject(obj).String())
		}
		if list.GetContinue() == "" {
			return report, nil
		}
		page = append(slices.Clone(opts), client.Limit(drainPageSize), client.Continue(list.GetContinue()))
	}
}
