/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// deletionsRetry is how long a watch that ended waits before it is opened
// again.
const deletionsRetry = time.Second

// Deletions watches the metadata of every object of resources in namespace
// ns ("" for all namespaces and cluster-scoped kinds) that matches the
// label selector, one watch per resource, and signals on the returned
// channel whenever an object being deleted appears, changes or goes, or an
// object starts being deleted: what `kubectl teardown status --watch`
// redraws on, instead of listing every kind at every interval. Signals
// coalesce: at most one waits. The watches start from the API server's
// watch cache (resourceVersion "0"), whose first events replay the objects
// there, so the first signal may come at once. A watch that ends is opened
// again after a second; a resource the user may not watch, or that is
// gone, is left out. It is a read, and stops with ctx.
func (c *Cluster) Deletions(ctx context.Context, resources []APIResource, ns, selector string) <-chan struct{} {
	out := make(chan struct{}, 1)
	signal := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	for _, r := range resources {
		if ns != "" && !r.Namespaced {
			continue
		}
		go c.watchDeletions(ctx, r, ns, selector, signal)
	}
	return out
}

func (c *Cluster) watchDeletions(ctx context.Context, r APIResource, ns, selector string, signal func()) {
	res := c.meta.Resource(r.GVR)
	open := func() (watch.Interface, error) {
		opts := metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"}
		if r.Namespaced {
			return res.Namespace(ns).Watch(ctx, opts)
		}
		return res.Watch(ctx, opts)
	}
	for ctx.Err() == nil {
		w, err := open()
		if err != nil {
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				return
			}
		} else {
			for ev := range w.ResultChan() {
				m, ok := ev.Object.(*metav1.PartialObjectMetadata)
				if !ok {
					continue // an error event: the watch ends, and is opened again
				}
				if m.DeletionTimestamp != nil {
					signal()
				}
			}
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(deletionsRetry):
		}
	}
}
