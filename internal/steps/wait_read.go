/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// What a wait step holds of the objects it reads is bounded:
//
//   - it keeps of each object only the fields its condition reads
//     (policy.ConditionReads), and lists metadata only when the condition
//     reads nothing else (the API server then sends metadata alone);
//   - objects are listed in pages (waitPage whole objects, or
//     waitMetadataPage objects' metadata), at most waitPagesAtOnce pages at
//     once in the whole controller, each projected before the next;
//   - what it keeps is at most MaxWaitRead bytes (about): past that the step
//     stops reading and says so (ErrWaitTooLarge), a transient error that
//     its timeout or the policy's deadline ends;
//   - targets waiting on the same set at once (same identity, kind,
//     namespace, selector and fields) share one read.
const (
	// MaxWaitRead bounds, in bytes, what one read of a wait step keeps.
	MaxWaitRead = 4 << 20
	// waitPage is how many whole objects one list call returns at most.
	waitPage = 20
	// waitMetadataPage is how many objects' metadata one list call returns.
	waitMetadataPage = 50
	// waitPagesAtOnce is how many pages are read at once.
	waitPagesAtOnce = 2
)

// waitReads shares reads between targets and bounds the pages read at once.
type waitReads struct {
	once   sync.Once
	flight singleflight.Group
	pages  chan struct{}
}

func (w *waitReads) init() {
	w.once.Do(func() { w.pages = make(chan struct{}, waitPagesAtOnce) })
}

// waitRead is what a wait step read of one resource selector: the objects,
// each as the fields its condition reads, and their names.
type waitRead struct {
	objects []any
	names   []types.NamespacedName
	// idle is how many of them are not being deleted.
	idle int
}

// WaitTooLargeError says the objects a wait step selects hold more of what
// its condition reads than a step may keep.
type WaitTooLargeError struct {
	Kind  string
	Count int
}

func (e *WaitTooLargeError) Error() string {
	return fmt.Sprintf("the %s objects this step selects hold more than %d MiB of the fields its condition reads (%d objects read before it stopped): narrow the step's selector, or read fewer fields in its condition",
		e.Kind, MaxWaitRead>>20, e.Count)
}

// readForCondition lists the objects of res that step i of pol selects for
// t (those being deleted only, for include Deleting), each as the fields its
// condition reads.
func (r *Runner) readForCondition(ctx context.Context, reader client.Reader, pol *policy.Policy, res teardownv1alpha1.ResourceSelector, fields *policy.Fields, include teardownv1alpha1.WaitInclude, t Object) (schema.GroupVersionKind, *waitRead, error) {
	sc, err := r.listOptions(pol, res, t)
	if err != nil {
		return sc.gvk, nil, err
	}
	scope := (&client.ListOptions{}).ApplyOptions(sc.opts)
	selector, namespaces := "", ""
	if scope.LabelSelector != nil {
		selector = scope.LabelSelector.String()
	}
	if sc.namespaces != nil {
		namespaces = sc.namespaces.String()
	}
	key := fmt.Sprintf("%p\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", reader, sc.gvk, scope.Namespace, selector, namespaces, include, fields)
	r.reads.init()
	v, err, _ := r.reads.flight.Do(key, func() (any, error) {
		in, err := inNamespaces(ctx, reader, sc)
		if err != nil {
			return nil, err
		}
		return r.listProjected(ctx, reader, sc.gvk, sc.opts, in, include == teardownv1alpha1.WaitIncludeDeleting, fields)
	})
	if err != nil {
		return sc.gvk, nil, err
	}
	return sc.gvk, v.(*waitRead), nil
}

// listProjected lists page by page, keeping of each object of a namespace
// in counts (and being deleted, when onlyDeleting) what fields reads, up to
// MaxWaitRead.
func (r *Runner) listProjected(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, opts []client.ListOption, in func(ns string) bool, onlyDeleting bool, fields *policy.Fields) (*waitRead, error) {
	out := &waitRead{}
	size := 0
	keep := func(obj map[string]any, ns, name string) error {
		if !in(ns) {
			return nil
		}
		if _, deleting, _ := unstructured.NestedFieldNoCopy(obj, "metadata", "deletionTimestamp"); !deleting {
			if onlyDeleting {
				return nil
			}
			out.idle++
		}
		p := fields.Project(obj)
		size += approxSize(p) + 32 + len(ns) + len(name)
		if size > MaxWaitRead {
			return &WaitTooLargeError{Kind: gvk.Kind, Count: len(out.objects)}
		}
		out.objects = append(out.objects, p)
		out.names = append(out.names, types.NamespacedName{Namespace: ns, Name: name})
		return nil
	}
	listKind := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	cont := ""
	for {
		page := append(opts[:len(opts):len(opts)], client.Continue(cont))
		select {
		case r.reads.pages <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		var err error
		if fields.MetadataOnly() {
			cont, err = r.metadataPage(ctx, reader, gvk, listKind, append(page, client.Limit(waitMetadataPage)), keep)
		} else {
			cont, err = r.objectPage(ctx, reader, gvk, listKind, append(page, client.Limit(waitPage)), keep)
		}
		<-r.reads.pages
		if err != nil || cont == "" {
			return out, err
		}
	}
}

// metadataPage reads one page of objects' metadata into keep.
func (r *Runner) metadataPage(ctx context.Context, reader client.Reader, gvk, listKind schema.GroupVersionKind, opts []client.ListOption, keep func(map[string]any, string, string) error) (string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(listKind)
	if err := reader.List(ctx, list, opts...); err != nil {
		return "", fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	for i := range list.Items {
		item := &list.Items[i]
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(item)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", gvk.Kind, err)
		}
		obj["apiVersion"], obj["kind"] = gvk.GroupVersion().String(), gvk.Kind
		if err := keep(obj, item.Namespace, item.Name); err != nil {
			return "", err
		}
	}
	return list.Continue, nil
}

// objectPage reads one page of whole objects into keep.
func (r *Runner) objectPage(ctx context.Context, reader client.Reader, gvk, listKind schema.GroupVersionKind, opts []client.ListOption, keep func(map[string]any, string, string) error) (string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(listKind)
	if err := reader.List(ctx, list, opts...); err != nil {
		return "", fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	for i := range list.Items {
		item := &list.Items[i]
		if err := keep(item.Object, item.GetNamespace(), item.GetName()); err != nil {
			return "", err
		}
		list.Items[i] = unstructured.Unstructured{} // the rest of it can go now
	}
	return list.GetContinue(), nil
}

// approxSize is about how many bytes v holds.
func approxSize(v any) int {
	switch v := v.(type) {
	case string:
		return 16 + len(v)
	case map[string]any:
		n := 48
		for k, e := range v {
			n += 16 + len(k) + approxSize(e)
		}
		return n
	case []any:
		n := 24
		for _, e := range v {
			n += approxSize(e)
		}
		return n
	default:
		return 16
	}
}
