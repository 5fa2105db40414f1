/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Client is how Finalizers reads and writes objects. It writes only
// metadata.finalizers (JSON patch) and one progress annotation (merge patch
// of that single key). Use ForClient or ForDynamic.
type Client interface {
	// Patch applies data to the object and refreshes obj's metadata from the
	// server's answer.
	Patch(ctx context.Context, obj client.Object, pt types.PatchType, data []byte) error
	// Read reads obj again from the API server, bypassing any cache.
	Read(ctx context.Context, obj client.Object) error
}

// ForClient adapts a controller-runtime client. Patches go through c; fresh
// reads go through reader, which must not be a cache: pass a manager's
// GetAPIReader(). A nil reader uses c, which is right for a client made with
// client.New. Typed, unstructured and metadata-only (PartialObjectMetadata)
// objects all work.
func ForClient(c client.Client, reader client.Reader) Client {
	if reader == nil {
		reader = c
	}
	return &runtimeClient{c: c, reader: reader}
}

type runtimeClient struct {
	c      client.Client
	reader client.Reader
}

func (r *runtimeClient) Patch(ctx context.Context, obj client.Object, pt types.PatchType, data []byte) error {
	return r.c.Patch(ctx, obj, client.RawPatch(pt, data))
}

func (r *runtimeClient) Read(ctx context.Context, obj client.Object) error {
	return r.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}

// ForDynamic adapts a client-go dynamic client for one resource, for code that
// does not use controller-runtime: objects may be typed (from a typed
// informer), unstructured or metadata-only. Only obj's metadata is refreshed
// from the server's answers; the library reads nothing else.
func ForDynamic(dyn dynamic.Interface, gvr schema.GroupVersionResource) Client {
	return &dynamicClient{dyn: dyn, gvr: gvr}
}

type dynamicClient struct {
	dyn dynamic.Interface
	gvr schema.GroupVersionResource
}

func (d *dynamicClient) Patch(ctx context.Context, obj client.Object, pt types.PatchType, data []byte) error {
	got, err := d.dyn.Resource(d.gvr).Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), pt, data, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	return copyMetadata(obj, got)
}

func (d *dynamicClient) Read(ctx context.Context, obj client.Object) error {
	got, err := d.dyn.Resource(d.gvr).Namespace(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	return copyMetadata(obj, got)
}

// copyMetadata refreshes dst's metadata from src. An unstructured dst takes
// the whole object.
func copyMetadata(dst client.Object, src *unstructured.Unstructured) error {
	if u, ok := dst.(*unstructured.Unstructured); ok {
		u.Object = src.Object
		return nil
	}
	var m metav1.ObjectMeta
	if err := unstructuredToMeta(src, &m); err != nil {
		return fmt.Errorf("reading metadata of %s/%s: %w", src.GetNamespace(), src.GetName(), err)
	}
	if pom, ok := dst.(*metav1.PartialObjectMetadata); ok {
		pom.ObjectMeta = m
		return nil
	}
	type metaHolder interface{ GetObjectMeta() metav1.Object }
	holder, ok := dst.(metaHolder)
	if !ok {
		return errors.New("object does not expose its ObjectMeta; use an unstructured or metadata-only object")
	}
	target, ok := holder.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return errors.New("object's metadata is not a *metav1.ObjectMeta")
	}
	*target = m
	return nil
}

func unstructuredToMeta(u *unstructured.Unstructured, m *metav1.ObjectMeta) error {
	raw, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return errors.New("no metadata in the server's answer")
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(raw, m)
}
