/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/pager"
)

var (
	gvrAPIService    = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	gvrCRD           = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrPolicy        = schema.GroupVersionResource{Group: "teardown.dev", Version: "v1alpha1", Resource: "teardownpolicies"}
	gvrClusterPolicy = schema.GroupVersionResource{Group: "teardown.dev", Version: "v1alpha1", Resource: "clusterteardownpolicies"}
)

// Cluster is the engine's one access to the API server: the clients, and
// what one run reads once and shares between every object it explains
// (discovery, CRDs, APIServices, policies, workloads, namespaces, the
// metadata of whole namespaces, kube-controller-manager's Lease). It only
// reads, apart from server-side dry-runs and SubjectAccessReviews. Build
// one per run (a command, a reconcile): the caches never expire.
type Cluster struct {
	cfg    *rest.Config
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	meta   metadata.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper meta.RESTMapper
	// clock is the API server's clock, from the Date header of its
	// responses.
	clock *serverClock

	mu        sync.Mutex
	once      map[string]*sync.Once
	resources []APIResource
	// resourcesErr names the groups whose discovery failed.
	resourcesErr error
	crds         []unstructured.Unstructured
	apiSvcs      []unstructured.Unstructured
	policies     []Policy
	workloads    []workload
	nsCache      map[string]*corev1.Namespace
	scopes       map[string][]MetaItem
	scopeErrs    map[string][]error
	// bulk reads lists instead of single objects (Bulk).
	bulk bool
	// namedReviews counts, on a Bulk Cluster, the SubjectAccessReviews
	// asked about one object after the same question about every object of
	// its namespace was denied, by that question (serviceAccountMay).
	namedReviews map[string]int
	// lists are the cached lists of cache.go, by key.
	lists map[string]any
	// kube-controller-manager's liveness from its Lease, read once.
	kcm ControllerLiveness
}

// NewCluster builds the clients from cfg, which it copies (wrapping its
// transport to learn the API server's clock). mapper maps kinds to
// resources; nil builds one from discovery.
func NewCluster(cfg *rest.Config, mapper meta.RESTMapper) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	c := &Cluster{cfg: cfg, clock: &serverClock{}, nsCache: map[string]*corev1.Namespace{}}
	// Lease times are the API server's: compare them with its clock.
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &dateRecorder{next: rt, clock: c.clock} })
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	if c.meta, err = metadata.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a metadata client: %w", err)
	}
	// Fresh discovery for listing kinds: a disk cache can miss CRDs
	// created in the last hours, and status must not.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	c.disc = memory.NewMemCacheClient(dc)
	c.mapper = mapper
	if c.mapper == nil {
		c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(c.disc)
	}
	return c, nil
}

// Config is the REST config the clients were built from.
func (c *Cluster) Config() *rest.Config { return c.cfg }

// Kube is the typed client.
func (c *Cluster) Kube() kubernetes.Interface { return c.kube }

// Dynamic is the dynamic client.
func (c *Cluster) Dynamic() dynamic.Interface { return c.dyn }

// Metadata is the metadata-only client.
func (c *Cluster) Metadata() metadata.Interface { return c.meta }

// Mapper maps kinds to resources.
func (c *Cluster) Mapper() meta.RESTMapper { return c.mapper }

// APIResource is one listable resource type.
type APIResource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Verbs      []string
}

func (r APIResource) apiVersion() string { return r.GVR.GroupVersion().String() }

// discoverResources returns the preferred version of every listable resource type.
// Groups whose discovery fails are skipped and reported in the error, which
// is then informational: the result is still usable.
func (c *Cluster) discoverResources() ([]APIResource, error) {
	lists, err := c.disc.ServerPreferredResources()
	var partial error
	if err != nil {
		if !discovery.IsGroupDiscoveryFailedError(err) {
			return nil, fmt.Errorf("discovering resources: %w", err)
		}
		partial = err
	}
	var out []APIResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !containsString(r.Verbs, "list") {
				continue
			}
			out = append(out, APIResource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, Verbs: r.Verbs})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GVR.String() < out[j].GVR.String() })
	return out, partial
}

// MetaItem is one object from a metadata-only list.
type MetaItem struct {
	Res APIResource
	Obj metav1.PartialObjectMetadata
}

// Ref names the object.
func (m MetaItem) Ref() ObjectRef {
	return ObjectRef{APIVersion: m.Res.apiVersion(), Kind: m.Res.Kind, Resource: m.Res.GVR.Resource, Namespace: m.Obj.Namespace, Name: m.Obj.Name, UID: string(m.Obj.UID)}
}

// ListMeta lists the metadata of every object of resources in namespace ns
// ("" for all namespaces and cluster-scoped kinds) that matches the label
// selector (everything if ""), with workers lists in flight. Lists that
// fail (forbidden, gone) are returned as errors beside the items of the
// others.
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

// ListError is a list of one resource that failed.
type ListError struct {
	Res APIResource
	Err error
}

func (l *ListError) Error() string { return fmt.Sprintf("listing %s: %v", l.Res.GVR, l.Err) }
func (l *ListError) Unwrap() error { return l.Err }

// GetObject reads one object in full.
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

func (c *Cluster) getNamespace(ctx context.Context, ns string) *corev1.Namespace {
	if ns == "" {
		return nil
	}
	// Once per namespace, also when explainers ask at the same time.
	c.doOnce("namespace/"+ns, func() {
		got, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			got = nil
		}
		c.mu.Lock()
		c.nsCache[ns] = got
		c.mu.Unlock()
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nsCache[ns]
}

func (c *Cluster) namespaceTerminating(ctx context.Context, ns string) bool {
	n := c.getNamespace(ctx, ns)
	return n != nil && n.DeletionTimestamp != nil
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

func (c *Cluster) getCRDs(ctx context.Context) []unstructured.Unstructured {
	c.doOnce("crds", func() {
		if l, err := c.dyn.Resource(gvrCRD).List(ctx, metav1.ListOptions{}); err == nil {
			c.crds = l.Items
		}
	})
	return c.crds
}

func (c *Cluster) getAPIServices(ctx context.Context) []unstructured.Unstructured {
	c.doOnce("apiservices", func() {
		if l, err := c.dyn.Resource(gvrAPIService).List(ctx, metav1.ListOptions{}); err == nil {
			c.apiSvcs = l.Items
		}
	})
	return c.apiSvcs
}

func (c *Cluster) getResources() []APIResource {
	rs, _ := c.Resources()
	return rs
}

// Resources is every listable resource type at its preferred version,
// discovered once per run; the error, when the list is not nil, names the
// groups whose discovery failed and is informational.
func (c *Cluster) Resources() ([]APIResource, error) {
	c.doOnce("resources", func() { c.resources, c.resourcesErr = c.discoverResources() })
	return c.resources, c.resourcesErr
}

// Fresh is a Cluster with the same clients and empty caches: the next
// refresh of a watch reads the cluster again.
func (c *Cluster) Fresh() *Cluster {
	return &Cluster{cfg: c.cfg, kube: c.kube, dyn: c.dyn, meta: c.meta, disc: c.disc, mapper: c.mapper, clock: c.clock,
		bulk: c.bulk, nsCache: map[string]*corev1.Namespace{}}
}

// scope lists every object in ns ("" for the whole cluster) once per run;
// chains ask for the same namespace again and again.
func (c *Cluster) scope(ctx context.Context, ns string) []MetaItem {
	items, _ := c.scopeWithErrors(ctx, ns)
	return items
}

// scopeWithErrors is scope with the lists that failed (forbidden kinds).
func (c *Cluster) scopeWithErrors(ctx context.Context, ns string) ([]MetaItem, []error) {
	c.doOnce("scope/"+ns, func() {
		items, errs := c.ListMeta(ctx, c.getResources(), ns, "", 8)
		c.setScope(ns, items, errs)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scopes[ns], c.scopeErrs[ns]
}

func (c *Cluster) setScope(ns string, items []MetaItem, errs []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scopes == nil {
		c.scopes, c.scopeErrs = map[string][]MetaItem{}, map[string][]error{}
	}
	c.scopes[ns], c.scopeErrs[ns] = items, errs
}

// SeedScope hands the engine a metadata list the caller already made of
// every listable kind in ns ("" for the whole cluster), with the lists
// that failed, so that it does not list them again. It is ignored once
// the engine has listed ns itself. Events may be left out: the engine never
// counts them as content.
func (c *Cluster) SeedScope(ns string, items []MetaItem, errs []error) {
	c.doOnce("scope/"+ns, func() { c.setScope(ns, items, errs) })
}

// dependents returns the objects whose ownerReferences name uid, found with
// metadata-only lists in ns ("" for everywhere).
func (c *Cluster) dependents(ctx context.Context, ns string, uid types.UID) []MetaItem {
	items := c.scope(ctx, ns)
	var out []MetaItem
	for _, it := range items {
		for _, r := range it.Obj.OwnerReferences {
			if r.UID == uid {
				out = append(out, it)
				break
			}
		}
	}
	return out
}

type metaMapping struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

func (c *Cluster) mapKind(gvk schema.GroupVersionKind) *metaMapping {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil
	}
	return &metaMapping{gvr: m.Resource, namespaced: m.Scope.Name() == "namespace"}
}

func (c *Cluster) findByUID(ctx context.Context, m *metaMapping, uid types.UID) string {
	items, err := c.metaOf(ctx, m.gvr)
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
