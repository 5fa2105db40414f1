/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestObjectShapes runs the whole protocol on typed, unstructured and
// metadata-only objects, through a controller-runtime client and through a
// plain client-go dynamic client.
func TestObjectShapes(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	dyn := dynamic.NewForConfigOrDie(cfg)
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	cases := map[string]struct {
		client finalizer.Client
		shape  func(name string) client.Object
	}{
		"typed via controller-runtime": {client: finalizer.ForClient(k8s, nil), shape: func(name string) client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		}},
		"unstructured via controller-runtime": {client: finalizer.ForClient(k8s, nil), shape: func(name string) client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			u.SetName(name)
			u.SetNamespace(ns)
			return u
		}},
		"metadata-only via controller-runtime": {client: finalizer.ForClient(k8s, nil), shape: func(name string) client.Object {
			m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			return m
		}},
		"typed via client-go dynamic": {client: finalizer.ForDynamic(dyn, gvr), shape: func(name string) client.Object {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		}},
		"metadata-only via client-go dynamic": {client: finalizer.ForDynamic(dyn, gvr), shape: func(name string) client.Object {
			m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap")) // for the test's own reads
			return m
		}},
	}
	i := 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i++
			const key = "shapes.example.com/cleanup"
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shape-" + string(rune('a'+i)), Namespace: ns}}
			if err := k8s.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			ran := 0
			fin := finalizer.New(tc.client)
			if err := fin.Register(key, finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result {
				ran++
				return finalizer.Done()
			})); err != nil {
				t.Fatal(err)
			}
			obj := tc.shape(cm.Name)
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), obj); err != nil {
				t.Fatal(err)
			}
			out, err := fin.Reconcile(t.Context(), obj)
			if err != nil || !slices.Equal(out.Added, []string{key}) || !slices.Contains(obj.GetFinalizers(), key) {
				t.Fatalf("first Reconcile = %+v, %v; object finalizers %v; want %s added and seen on the object", out, err, obj.GetFinalizers(), key)
			}
			if err := k8s.Delete(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), obj); err != nil {
				t.Fatal(err)
			}
			out, err = fin.Reconcile(t.Context(), obj)
			if err != nil || !slices.Equal(out.Removed, []string{key}) || ran != 1 {
				t.Fatalf("Reconcile after delete = %+v, %v (handler ran %d times); want %s removed after one run", out, err, ran, key)
			}
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Errorf("object still there after its last finalizer went: %v", err)
			}
		})
	}
}
