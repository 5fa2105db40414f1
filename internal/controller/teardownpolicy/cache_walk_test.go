/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/controller/cachetransform"
	"github.com/teardown-dev/teardown/internal/guarded"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestEachCachedWalksWhatListReturns checks the walk the status counts and
// the diagnosis read against a List through the same cache: the same
// objects, per namespace and across all of them, an error before the cache
// has started, and a stop when the callback says so.
func TestEachCachedWalksWhatListReturns(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	mine, other := testenv.NewNamespace(t, admin), testenv.NewNamespace(t, admin)
	for ns, n := range map[string]int{mine: 3, other: 2} {
		for i := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: ns,
				Labels: map[string]string{"app": "walk"}, Finalizers: []string{"example.com/walk"}}}
			if err := admin.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cm.Finalizers = nil
				_ = admin.Update(ctx, cm)
			})
		}
	}
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(adminCfg, cache.Options{Scheme: scheme, DefaultTransform: cachetransform.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	walk := func(namespace string) ([]string, error) {
		var names []string
		err := guarded.EachCached(ctx, c, gvk, namespace, func(obj *metav1.PartialObjectMetadata) bool {
			names = append(names, obj.Namespace+"/"+obj.Name)
			return true
		})
		slices.Sort(names)
		return names, err
	}

	var notStarted *cache.ErrCacheNotStarted
	if _, err := walk(mine); !errors.As(err, &notStarted) {
		t.Errorf("walk before the cache started: error %v, want ErrCacheNotStarted as List gives", err)
	}

	go func() {
		if err := c.Start(ctx); err != nil {
			t.Error(err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	for _, namespace := range []string{mine, other, ""} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind("ConfigMapList"))
		if err := c.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, o := range list.Items {
			want = append(want, o.Namespace+"/"+o.Name)
		}
		slices.Sort(want)
		got, err := walk(namespace)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("walk of namespace %q differs from List (-list +walk):\n%s", namespace, diff)
		}
		ours := slices.DeleteFunc(slices.Clone(got), func(name string) bool { return !strings.Contains(name, "/cm-") })
		if want := map[string]int{mine: 3, other: 2}[namespace]; namespace != "" && len(ours) != want {
			t.Errorf("walk of %s: %v, want %d of the test's ConfigMaps", namespace, ours, want)
		}
	}

	visited := 0
	if err := guarded.EachCached(ctx, c, gvk, mine, func(*metav1.PartialObjectMetadata) bool {
		visited++
		return false
	}); err != nil || visited != 1 {
		t.Errorf("a walk told to stop at once visited %d objects (error %v), want 1", visited, err)
	}
}
