/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"
)

// This file holds the lists checks read per object, cached on the Cluster
// so that explaining many objects (status) costs one list per kind and
// namespace, not one request per object.

// listed is a cached list and the error it failed with.
type listed[T any] struct {
	items []T
	err   error
}

// cachedList runs load once per key and run, and returns its result.
func cachedList[T any](c *Cluster, key string, load func() ([]T, error)) ([]T, error) {
	c.doOnce("list/"+key, func() {
		items, err := load()
		c.mu.Lock()
		if c.lists == nil {
			c.lists = map[string]any{}
		}
		c.lists[key] = listed[T]{items: items, err: err}
		c.mu.Unlock()
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	l, _ := c.lists[key].(listed[T])
	return l.items, l.err
}

// listPaged reads every item of a list in pages of 500 with client-go's
// pager, which falls back to a full list when a continue token expires.
func listPaged[T any](ctx context.Context, opts metav1.ListOptions, list pager.ListPageFunc) ([]T, error) {
	var out []T
	p := pager.New(list)
	p.PageSize = 500
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		item, ok := any(obj).(*T)
		if !ok {
			return fmt.Errorf("unexpected list item %T", obj)
		}
		out = append(out, *item)
		return nil
	})
	return out, err
}

// podsIn is every pod in ns ("" for all), read once per run.
func (c *Cluster) podsIn(ctx context.Context, ns string) ([]corev1.Pod, error) {
	return cachedList(c, "pods/"+ns, func() ([]corev1.Pod, error) {
		return listPaged[corev1.Pod](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.kube.CoreV1().Pods(ns).List(ctx, o)
		})
	})
}

// pod is one pod from podsIn, or a NotFound error.
func (c *Cluster) pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	pods, err := c.podsIn(ctx, ns)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i], nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

// podsLabelled is every pod matching selector, in every namespace.
func (c *Cluster) podsLabelled(ctx context.Context, selector string) ([]corev1.Pod, error) {
	return cachedList(c, "pods?"+selector, func() ([]corev1.Pod, error) {
		return listPaged[corev1.Pod](ctx, metav1.ListOptions{LabelSelector: selector}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.kube.CoreV1().Pods("").List(ctx, o)
		})
	})
}

// node is one Node, from one list of them all, or a NotFound error.
func (c *Cluster) node(ctx context.Context, name string) (*corev1.Node, error) {
	nodes, err := cachedList(c, "nodes", func() ([]corev1.Node, error) {
		return listPaged[corev1.Node](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.kube.CoreV1().Nodes().List(ctx, o)
		})
	})
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i], nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

// job is one Job, from one list of its namespace, or a NotFound error.
func (c *Cluster) job(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	jobs, err := cachedList(c, "jobs/"+ns, func() ([]batchv1.Job, error) {
		return listPaged[batchv1.Job](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.kube.BatchV1().Jobs(ns).List(ctx, o)
		})
	})
	if err != nil {
		return nil, err
	}
	for i := range jobs {
		if jobs[i].Name == name {
			return &jobs[i], nil
		}
	}
	return nil, apierrors.NewNotFound(batchv1.Resource("jobs"), name)
}

// leases is every coordination.k8s.io Lease of the cluster.
func (c *Cluster) leases(ctx context.Context) ([]coordinationv1.Lease, error) {
	return cachedList(c, "leases", func() ([]coordinationv1.Lease, error) {
		return listPaged[coordinationv1.Lease](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.kube.CoordinationV1().Leases("").List(ctx, o)
		})
	})
}

// warningEventsIn is every Warning Event of namespace ns.
func (c *Cluster) warningEventsIn(ctx context.Context, ns string) ([]corev1.Event, error) {
	return cachedList(c, "warnings/"+ns, func() ([]corev1.Event, error) {
		return listPaged[corev1.Event](ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.kube.CoreV1().Events(ns).List(ctx, o)
		})
	})
}

// metaOf is the metadata of every object of gvr (all namespaces).
func (c *Cluster) metaOf(ctx context.Context, gvr schema.GroupVersionResource) ([]metav1.PartialObjectMetadata, error) {
	return cachedList(c, "meta/"+gvr.String(), func() ([]metav1.PartialObjectMetadata, error) {
		return listPaged[metav1.PartialObjectMetadata](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.meta.Resource(gvr).List(ctx, o)
		})
	})
}

// metaGet is the metadata of one object, read once per run.
func (c *Cluster) metaGet(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*metav1.PartialObjectMetadata, error) {
	got, err := cachedList(c, "get/"+gvr.String()+"/"+ns+"/"+name, func() ([]metav1.PartialObjectMetadata, error) {
		var (
			m   *metav1.PartialObjectMetadata
			err error
		)
		if ns != "" {
			m, err = c.meta.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		} else {
			m, err = c.meta.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return nil, err
		}
		return []metav1.PartialObjectMetadata{*m}, nil
	})
	if err != nil {
		return nil, err
	}
	return &got[0], nil
}

// Bulk makes c read whole lists instead of single objects (GetObject): for
// a run that explains many objects (status), where one list per kind and
// namespace costs less than one GET per object.
func (c *Cluster) Bulk() *Cluster {
	c.bulk = true
	return c
}

// listedObject is GetObject from one list of gvr in ns, read once per run.
func (c *Cluster) listedObject(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	items, err := cachedList(c, "objects/"+gvr.String()+"/"+ns, func() ([]unstructured.Unstructured, error) {
		return listPaged[unstructured.Unstructured](ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if ns != "" {
				return c.dyn.Resource(gvr).Namespace(ns).List(ctx, o)
			}
			return c.dyn.Resource(gvr).List(ctx, o)
		})
	})
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

// accessReview asks the authorizer, once per run and question, whether
// user (in groups) may do attrs.
func (c *Cluster) accessReview(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (authorizationv1.SubjectAccessReviewStatus, error) {
	key := fmt.Sprintf("sar/%s/%s/%s/%s/%s/%s/%s", user, attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace, attrs.Name, strings.Join(groups, ","))
	got, err := cachedList(c, key, func() ([]authorizationv1.SubjectAccessReviewStatus, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}
		got, err := c.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return []authorizationv1.SubjectAccessReviewStatus{got.Status}, nil
	})
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	return got[0], nil
}

// typed is GetObject into a typed object: one GET, or on a Bulk Cluster one
// list per kind and namespace, whichever the run prefers.
func typed[T any](ctx context.Context, c *Cluster, gvr schema.GroupVersionResource, ns, name string) (*T, error) {
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
