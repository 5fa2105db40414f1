/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Cluster is what one run reads of the cluster, read once and shared
// between every object it explains. Build one per run: the caches never
// expire (Fresh starts again with the same clients).
type Cluster struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	meta   metadata.Interface
	disc   discovery.DiscoveryInterface
	mapper meta.RESTMapper
	// clock is the API server's clock, from the Date header of its
	// responses; nil when the clients were built elsewhere (New).
	clock *serverClock

	mu   sync.Mutex
	once map[string]*sync.Once
	// memo holds every cached list and derived value, by key.
	memo   map[string]any
	scopes map[string]scopeRead
	// bulk reads lists instead of single objects (Bulk).
	bulk bool
	// namedReviews counts, on a Bulk Cluster, the SubjectAccessReviews
	// asked about one object after the same question about every object of
	// its namespace was denied, by that question (MayAskByName).
	namedReviews map[string]int
}

// Clients are the interfaces a Cluster reads through: client-go's clients,
// or their fakes.
type Clients struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// Mapper maps kinds to resources; nil builds one from Discovery.
	Mapper meta.RESTMapper
}

// New reads through cl. Times are judged by the local clock.
func New(cl Clients) *Cluster {
	c := &Cluster{kube: cl.Kube, dyn: cl.Dynamic, meta: cl.Metadata, disc: cl.Discovery, mapper: cl.Mapper}
	if c.mapper == nil {
		c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cl.Discovery))
	}
	return c
}

// NewForConfig builds the clients from cfg, which it copies (wrapping its
// transport to learn the API server's clock). mapper maps kinds to
// resources; nil builds one from discovery.
func NewForConfig(cfg *rest.Config, mapper meta.RESTMapper) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	clock := &serverClock{}
	// Lease times are the API server's: compare them with its clock.
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &dateRecorder{next: rt, clock: clock} })
	var (
		cl  Clients
		err error
	)
	if cl.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	if cl.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	if cl.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a metadata client: %w", err)
	}
	// Fresh discovery for listing kinds: a disk cache can miss CRDs
	// created in the last hours, and status must not.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	cl.Discovery, cl.Mapper = memory.NewMemCacheClient(dc), mapper
	c := New(cl)
	c.clock = clock
	return c, nil
}

// Fresh is a Cluster with the same clients and empty caches: the next
// refresh of a watch reads the cluster again.
func (c *Cluster) Fresh() *Cluster {
	return &Cluster{kube: c.kube, dyn: c.dyn, meta: c.meta, disc: c.disc, mapper: c.mapper, clock: c.clock, bulk: c.bulk}
}

// Bulk makes c read whole lists instead of single objects (GetObject): for
// a run that explains many objects (status), where one list per kind and
// namespace costs less than one GET per object.
func (c *Cluster) Bulk() *Cluster {
	c.bulk = true
	return c
}

// IsBulk is true for a Bulk Cluster.
func (c *Cluster) IsBulk() bool { return c.bulk }

// Mapper maps kinds to resources.
func (c *Cluster) Mapper() meta.RESTMapper { return c.mapper }

// Mapping is where the objects of a kind are served.
type Mapping struct {
	GVR        schema.GroupVersionResource
	Namespaced bool
}

// MapKind maps gvk to its resource; nil when the cluster does not serve it.
func (c *Cluster) MapKind(gvk schema.GroupVersionKind) *Mapping {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil
	}
	return &Mapping{GVR: m.Resource, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
}

func (c *Cluster) doOnce(key string, fn func()) {
	c.mu.Lock()
	if c.once == nil {
		c.once = map[string]*sync.Once{}
	}
	o, ok := c.once[key]
	if !ok {
		o = &sync.Once{}
		c.once[key] = o
	}
	c.mu.Unlock()
	o.Do(fn)
}

// memoized is a cached value and the error it was read with.
type memoized[T any] struct {
	v   T
	err error
}

// cached runs load once per key and run, also when callers ask at the same
// time, and returns its result.
func cached[T any](c *Cluster, key string, load func() (T, error)) (T, error) {
	c.doOnce(key, func() {
		v, err := load()
		c.mu.Lock()
		if c.memo == nil {
			c.memo = map[string]any{}
		}
		c.memo[key] = memoized[T]{v: v, err: err}
		c.mu.Unlock()
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	m, _ := c.memo[key].(memoized[T])
	return m.v, m.err
}

// Memo computes a value derived from c's getters once per run and key (the
// engine's Teardown policies, workloads, kube-controller-manager's
// liveness), so that every object of the run shares it. load reads only
// through c.
func Memo[T any](c *Cluster, key string, load func() T) T {
	v, _ := cached(c, "memo/"+key, func() (T, error) { return load(), nil })
	return v
}
