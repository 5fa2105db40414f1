/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// cluster is a command run's access to the API server: the diagnosis
// engine's read-only view (read), through which every command reads; the
// plugin's own clients for what release writes (the removal, /finalize,
// the audit Event), its read back of the result and who it writes as; and
// the namespace -n (or the kubeconfig context) names.
type cluster struct {
	read *kube.Cluster
	kube kubernetes.Interface
	dyn  dynamic.Interface
	// host is the API server's address, for the audit record.
	host string
	// namespace is the -n namespace, or the kubeconfig context's.
	namespace string
	// explicitNamespace is true when -n was given.
	explicitNamespace bool
}

func newCluster(f *genericclioptions.ConfigFlags) (*cluster, error) {
	if err := checkClusterConfigured(f); err != nil {
		return nil, err
	}
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
	mapper, err := f.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("creating a REST mapper: %w", err)
	}
	read, err := kube.NewForConfig(cfg, mapper)
	if err != nil {
		return nil, err
	}
	c := &cluster{read: read, host: cfg.Host}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	ns, explicit, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace: %w", err)
	}
	c.namespace, c.explicitNamespace = ns, explicit
	return c, nil
}

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
func (c *cluster) resolve(typ, name string) (diagnose.Target, error) {
	var gvr schema.GroupVersionResource
	full, gr := schema.ParseResourceArg(strings.ToLower(typ))
	var err error
	if full != nil {
		gvr, err = c.read.Mapper().ResourceFor(*full)
	}
	if full == nil || err != nil {
		gvr, err = c.read.Mapper().ResourceFor(gr.WithVersion(""))
	}
	if err != nil {
		// Only a type the server does not serve is the user's mistake; an
		// unreachable or failing API server is an error (exit code 1).
		if meta.IsNoMatchError(err) {
			return diagnose.Target{}, &exitError{code: ExitUsage, err: fmt.Errorf("unknown resource type %q: %w", typ, err)}
		}
		return diagnose.Target{}, fmt.Errorf("resolving the resource type %q: %w", typ, err)
	}
	gvk, err := c.read.Mapper().KindFor(gvr)
	if err != nil {
		return diagnose.Target{}, fmt.Errorf("finding the kind of %s: %w", gvr, err)
	}
	mapping, err := c.read.Mapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return diagnose.Target{}, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	t := diagnose.Target{GVR: gvr, GVK: gvk, Name: name, Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	if t.Namespaced {
		t.Namespace = c.namespace
	}
	return t, nil
}

// dynamicResource is a namespaced or cluster-wide dynamic resource client.
type dynamicResource = dynamic.ResourceInterface
