/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// cluster holds the clients of one command run.
type cluster struct {
	cfg    *rest.Config
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	meta   metadata.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper meta.RESTMapper
	// namespace is the -n namespace, or the kubeconfig context's.
	namespace string
	// explicitNamespace is true when -n was given.
	explicitNamespace bool
	// clock is the API server's clock, from the Date header of its
	// responses.
	clock *serverClock
}

func newCluster(f *genericclioptions.ConfigFlags) (*cluster, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-teardown"
	// Listing every kind reads deprecated ones too (v1 Endpoints); their
	// warnings are noise here.
	cfg.WarningHandler = rest.NoWarnings{}
	// Parallel metadata lists: the default 5 QPS would serialise them.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 200, 400
	}
	c := &cluster{cfg: cfg, clock: &serverClock{}}
	// Lease times are the API server's: compare them with its clock.
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &dateRecorder{next: rt, clock: c.clock} })
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	if c.meta, err = metadata.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a metadata client: %w", err)
	}
	// Fresh discovery for listing kinds: the kubeconfig's disk cache can
	// miss CRDs created in the last hours, and status must not.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	c.disc = memory.NewMemCacheClient(dc)
	if c.mapper, err = f.ToRESTMapper(); err != nil {
		return nil, fmt.Errorf("creating a REST mapper: %w", err)
	}
	ns, explicit, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace: %w", err)
	}
	c.namespace, c.explicitNamespace = ns, explicit
	return c, nil
}

// target is the object a command works on.
type target struct {
	GVR        schema.GroupVersionResource
	GVK        schema.GroupVersionKind
	Namespaced bool
	Namespace  string
	Name       string
}

func (t target) ref() ObjectRef {
	return ObjectRef{APIVersion: t.GVK.GroupVersion().String(), Kind: t.GVK.Kind, Resource: t.GVR.Resource, Namespace: t.Namespace, Name: t.Name}
}

func (t target) isNamespace() bool { return t.GVR.Group == "" && t.GVR.Resource == "namespaces" }

// splitTargetArgs accepts TYPE/NAME or TYPE NAME.
func splitTargetArgs(args []string) (string, string, error) {
	switch len(args) {
	case 1:
		typ, name, ok := strings.Cut(args[0], "/")
		if !ok || typ == "" || name == "" {
			return "", "", usageErrorf("expected TYPE/NAME or TYPE NAME, got %q", args[0])
		}
		return typ, name, nil
	case 2:
		if strings.Contains(args[0], "/") {
			return "", "", usageErrorf("expected TYPE/NAME or TYPE NAME, got %q", strings.Join(args, " "))
		}
		return args[0], args[1], nil
	default:
		return "", "", usageErrorf("expected TYPE/NAME or TYPE NAME")
	}
}

// resolve maps TYPE (a resource, short name, kind, or resource.group) to a
// GVR and kind, as kubectl does.
func (c *cluster) resolve(typ, name string) (target, error) {
	var gvr schema.GroupVersionResource
	full, gr := schema.ParseResourceArg(strings.ToLower(typ))
	var err error
	if full != nil {
		gvr, err = c.mapper.ResourceFor(*full)
	}
	if full == nil || err != nil {
		gvr, err = c.mapper.ResourceFor(gr.WithVersion(""))
	}
	if err != nil {
		// Only a type the server does not serve is the user's mistake; an
		// unreachable or failing API server is an error (exit code 1).
		if meta.IsNoMatchError(err) {
			return target{}, &exitError{code: ExitUsage, err: fmt.Errorf("unknown resource type %q: %w", typ, err)}
		}
		return target{}, fmt.Errorf("resolving the resource type %q: %w", typ, err)
	}
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return target{}, fmt.Errorf("finding the kind of %s: %w", gvr, err)
	}
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return target{}, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	t := target{GVR: gvr, GVK: gvk, Name: name, Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	if t.Namespaced {
		t.Namespace = c.namespace
	}
	return t, nil
}

// apiResource is one listable resource type.
type apiResource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Verbs      []string
}

func (r apiResource) apiVersion() string { return r.GVR.GroupVersion().String() }

// resources returns the preferred version of every listable resource type.
// Groups whose discovery fails are skipped and reported in the error, which
// is then informational: the result is still usable.
func (c *cluster) resources() ([]apiResource, error) {
	lists, err := c.disc.ServerPreferredResources()
	var partial error
	if err != nil {
		if !discovery.IsGroupDiscoveryFailedError(err) {
			return nil, fmt.Errorf("discovering resources: %w", err)
		}
		partial = err
	}
	var out []apiResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !containsString(r.Verbs, "list") {
				continue
			}
			out = append(out, apiResource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, Verbs: r.Verbs})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GVR.String() < out[j].GVR.String() })
	return out, partial
}

// metaItem is one object from a metadata-only list.
type metaItem struct {
	Res apiResource
	Obj metav1.PartialObjectMetadata
}

func (m metaItem) ref() ObjectRef {
	return ObjectRef{APIVersion: m.Res.apiVersion(), Kind: m.Res.Kind, Resource: m.Res.GVR.Resource, Namespace: m.Obj.Namespace, Name: m.Obj.Name, UID: string(m.Obj.UID)}
}

// listMeta lists the metadata of every object of resources in namespace ns
// ("" for all namespaces and cluster-scoped kinds) that matches the label
// selector (everything if ""), with workers lists in flight. Lists that
// fail (forbidden, gone) are returned as errors beside the items of the
// others.
func (c *cluster) listMeta(ctx context.Context, resources []apiResource, ns, selector string, workers int) ([]metaItem, []error) {
	if workers < 1 {
		workers = 1
	}
	var (
		mu    sync.Mutex
		items []metaItem
		errs  []error
		wg    sync.WaitGroup
	)
	work := make(chan apiResource)
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

func (c *cluster) listOne(ctx context.Context, r apiResource, ns, selector string) ([]metaItem, error) {
	var out []metaItem
	opts := metav1.ListOptions{Limit: 500, LabelSelector: selector}
	for {
		var (
			l   *metav1.PartialObjectMetadataList
			err error
		)
		if r.Namespaced {
			l, err = c.meta.Resource(r.GVR).Namespace(ns).List(ctx, opts)
		} else {
			l, err = c.meta.Resource(r.GVR).List(ctx, opts)
		}
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				return out, nil
			}
			return out, fmt.Errorf("listing %s: %w", r.GVR, err)
		}
		for i := range l.Items {
			out = append(out, metaItem{Res: r, Obj: l.Items[i]})
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// age renders a duration the way kubectl's AGE column does (90s, 2m30s,
// 5h10m, 3d4h).
func age(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	return duration.HumanDuration(d)
}

// ignorable reports API errors that mean "this kind is not here / not ours".
func ignorable(err error) bool {
	return err == nil || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || errors.Is(err, context.Canceled) || meta.IsNoMatchError(err)
}

// dynamicResource is a namespaced or cluster-wide dynamic resource client.
type dynamicResource = dynamic.ResourceInterface

func runtimeFromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
