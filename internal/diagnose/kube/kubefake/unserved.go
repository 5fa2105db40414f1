/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kubefake

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// servedOnly is a dynamic client that answers NotFound, as the API server
// does, for a resource it does not serve: client-go's fake panics on a
// list of a resource it was not told the list kind of.
type servedOnly struct {
	dynamic.Interface
	served map[schema.GroupVersionResource]bool
}

func (s servedOnly) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	if s.served[gvr] {
		return s.Interface.Resource(gvr)
	}
	return unserved{gvr: gvr}
}

// unserved answers every request NotFound. The methods the engine does not
// call are left to the nil interface (a panic names them).
type unserved struct {
	dynamic.NamespaceableResourceInterface
	gvr schema.GroupVersionResource
}

func (u unserved) Namespace(string) dynamic.ResourceInterface { return u }

func (u unserved) notFound(name string) error {
	return apierrors.NewNotFound(u.gvr.GroupResource(), name)
}

func (u unserved) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	return nil, u.notFound(name)
}

func (u unserved) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return nil, u.notFound("")
}

func (u unserved) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, u.notFound("")
}

func (u unserved) Patch(_ context.Context, name string, _ types.PatchType, _ []byte, _ metav1.PatchOptions, _ ...string) (*unstructured.Unstructured, error) {
	return nil, u.notFound(name)
}
