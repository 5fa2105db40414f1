/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"
)

var gvrConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// MetaItem is one object from a metadata-only list.
type MetaItem struct {
	Res APIResource
	Obj metav1.PartialObjectMetadata
}

// ListError is a list of one resource that failed.
type ListError struct {
	Res APIResource
	Err error
}

func (l *ListError) Error() string { return fmt.Sprintf("listing %s: %v", l.Res.GVR, l.Err) }
func (l *ListError) Unwrap() error { return l.Err }

// ListMeta lists the metadata of every object of resources in namespace ns
// ("" for all namespaces and cluster-scoped kinds) that matches the label
// selector (everything if ""), with workers lists in flight. Lists that
// fail (forbidden, gone) are returned as errors beside the items of the
// others. It is not cached: the caller decides what one run lists.
func (c *Cluster) ListMeta(ctx context.Context, resources []APIResource, ns, selector string, workers int) ([]MetaItem, []error) {
	if workers < 1 {
		workers = 1
	}
	var (
		mu    sync.Mutex
		items []MetaItem
		errs  []error
		wg    sync.WaitGroup
	)
	work := make(chan APIResource)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				got, err := c.listOne(ctx, r, ns, selector)
				mu.Lock()
				items = append(items, got...)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, r := range resources {
		if ns != "" && !r.Namespaced {
			continue
		}
		work <- r
	}
	close(work)
	wg.Wait()
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.Res.GVR.String() != b.Res.GVR.String() {
			return a.Res.GVR.String() < b.Res.GVR.String()
		}
		if a.Obj.Namespace != b.Obj.Namespace {
			return a.Obj.Namespace < b.Obj.Namespace
		}
		return a.Obj.Name < b.Obj.Name
	})
	return items, errs
}

func (c *Cluster) listOne(ctx context.Context, r APIResource, ns, selector string) ([]MetaItem, error) {
	var out []MetaItem
	res := c.meta.Resource(r.GVR)
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		if r.Namespaced {
			return res.Namespace(ns).List(ctx, opts)
		}
		return res.List(ctx, opts)
	}
	// The pager falls back to a full list when a continue token expires
	// (a cluster with many objects), rather than failing the kind.
	p := pager.New(list)
	p.PageSize = 500
	err := p.EachListItem(ctx, metav1.ListOptions{LabelSelector: selector}, func(obj runtime.Object) error {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return fmt.Errorf("listing %s: unexpected item %T", r.GVR, obj)
		}
		out = append(out, MetaItem{Res: r, Obj: *m})
		return nil
	})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return out, nil
		}
		return out, &ListError{Res: r, Err: err}
	}
	return out, nil
}

// scopeRead is one namespace's (or the cluster's) metadata, with the lists
// that failed.
type scopeRead struct {
	items []MetaItem
	errs  []error
}

// Scope lists every object in ns ("" for the whole cluster) once per run;
// chains ask for the same namespace again and again.
func (c *Cluster) Scope(ctx context.Context, ns string) []MetaItem {
	items, _ := c.ScopeWithErrors(ctx, ns)
	return items
}

// ScopeWithErrors is Scope with the lists that failed (forbidden kinds).
func (c *Cluster) ScopeWithErrors(ctx context.Context, ns string) ([]MetaItem, []error) {
	c.doOnce("scope/"+ns, func() {
		rs, _ := c.Resources()
		items, errs := c.ListMeta(ctx, rs, ns, "", 8)
		c.setScope(ns, items, errs)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.scopes[ns]
	return s.items, s.errs
}

func (c *Cluster) setScope(ns string, items []MetaItem, errs []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scopes == nil {
		c.scopes = map[string]scopeRead{}
	}
	c.scopes[ns] = scopeRead{items: items, errs: errs}
}

// SeedScope hands the engine a metadata list the caller already made of
// every listable kind in ns ("" for the whole cluster), with the lists
// that failed, so that it does not list them again. It is ignored once
// the engine has listed ns itself. Events may be left out: the engine never
// counts them as content.
func (c *Cluster) SeedScope(ns string, items []MetaItem, errs []error) {
	c.doOnce("scope/"+ns, func() { c.setScope(ns, items, errs) })
}

// Dependents returns the objects whose ownerReferences name uid, found with
// metadata-only lists in ns ("" for everywhere).
func (c *Cluster) Dependents(ctx context.Context, ns string, uid types.UID) []MetaItem {
	var out []MetaItem
	for _, it := range c.Scope(ctx, ns) {
		for _, r := range it.Obj.OwnerReferences {
			if r.UID == uid {
				out = append(out, it)
				break
			}
		}
	}
	return out
}

// MetaOf is the metadata of every object of gvr (all namespaces), in one
// paged list per run.
func (c *Cluster) MetaOf(ctx context.Context, gvr schema.GroupVersionResource) ([]metav1.PartialObjectMetadata, error) {
	return cached(c, "meta/"+gvr.String(), func() ([]metav1.PartialObjectMetadata, error) {
		return listPaged[metav1.PartialObjectMetadata](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.meta.Resource(gvr).List(ctx, o)
		})
	})
}

// MetaGet is the metadata of one object, read once per run.
func (c *Cluster) MetaGet(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*metav1.PartialObjectMetadata, error) {
	return cached(c, "get/"+gvr.String()+"/"+ns+"/"+name, func() (*metav1.PartialObjectMetadata, error) {
		if ns != "" {
			return c.meta.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		}
		return c.meta.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	})
}

// FindByUID is the namespace of the object of the mapped kind with uid, ""
// when there is none (or the list failed).
func (c *Cluster) FindByUID(ctx context.Context, m *Mapping, uid types.UID) string {
	items, err := c.MetaOf(ctx, m.GVR)
	if err != nil {
		return ""
	}
	for _, it := range items {
		if it.UID == uid {
			return it.Namespace
		}
	}
	return ""
}

// ConfigMapsMeta is the metadata of every ConfigMap of ns, read once per run.
func (c *Cluster) ConfigMapsMeta(ctx context.Context, ns string) ([]metav1.PartialObjectMetadata, error) {
	return cached(c, "configmaps/"+ns, func() ([]metav1.PartialObjectMetadata, error) {
		return listPaged[metav1.PartialObjectMetadata](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.meta.Resource(gvrConfigMaps).Namespace(ns).List(ctx, o)
		})
	})
}
