/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds every run may read whole.
var (
	GVRAPIService = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	GVRCRD        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// GetObject reads one object in full: one GET, or on a Bulk Cluster one
// list per kind and namespace (Objects).
func (c *Cluster) GetObject(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	if c.bulk {
		return c.listedObject(ctx, gvr, ns, name)
	}
	var (
		obj *unstructured.Unstructured
		err error
	)
	if ns != "" {
		obj, err = c.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	} else {
		obj, err = c.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("getting %s %s: %w", gvr.Resource, joinNS(ns, name), err)
	}
	return obj, nil
}

// Typed is GetObject into a typed object: one GET, or on a Bulk Cluster one
// list per kind and namespace, whichever the run prefers.
func Typed[T any](ctx context.Context, c *Cluster, gvr schema.GroupVersionResource, ns, name string) (*T, error) {
	u, err := c.GetObject(ctx, gvr, ns, name)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", gvr.Resource, joinNS(ns, name), err)
	}
	return out, nil
}

// Objects is every object of gvr in ns ("" for all namespaces and
// cluster-scoped kinds), in one paged list per run.
func (c *Cluster) Objects(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]unstructured.Unstructured, error) {
	return cached(c, "objects/"+gvr.String()+"/"+ns, func() ([]unstructured.Unstructured, error) {
		return listPaged[unstructured.Unstructured](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if ns != "" {
				return c.dyn.Resource(gvr).Namespace(ns).List(ctx, o)
			}
			return c.dyn.Resource(gvr).List(ctx, o)
		})
	})
}

// listedObject is GetObject from Objects.
func (c *Cluster) listedObject(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	items, err := c.Objects(ctx, gvr, ns)
	if err == nil {
		for i := range items {
			if items[i].GetName() == name {
				return &items[i], nil
			}
		}
		err = apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return nil, fmt.Errorf("getting %s %s: %w", gvr.Resource, joinNS(ns, name), err)
}

// ClusterObject is a cluster-scoped object read once per run: every managed
// resource of a provider asks for the same Provider and revision.
func (c *Cluster) ClusterObject(ctx context.Context, gvr schema.GroupVersionResource, name string) (*unstructured.Unstructured, error) {
	return cached(c, "object/"+gvr.String()+"/"+name, func() (*unstructured.Unstructured, error) {
		return c.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	})
}

// CRDs is every CustomResourceDefinition, read once per run; none when the
// list fails.
func (c *Cluster) CRDs(ctx context.Context) []unstructured.Unstructured {
	l, _ := cached(c, "crds", func() ([]unstructured.Unstructured, error) {
		l, err := c.dyn.Resource(GVRCRD).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	})
	return l
}

// APIServices is every APIService, read once per run; none when the list
// fails.
func (c *Cluster) APIServices(ctx context.Context) []unstructured.Unstructured {
	l, _ := cached(c, "apiservices", func() ([]unstructured.Unstructured, error) {
		l, err := c.dyn.Resource(GVRAPIService).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	})
	return l
}

func joinNS(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
