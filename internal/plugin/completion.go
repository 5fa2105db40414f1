/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Shell completion, for `kubectl teardown <TAB>` through the
// kubectl_complete-teardown script (kubectl 1.26 and later) and for
// `kubectl-teardown completion`. kubectl's own helpers
// (k8s.io/kubectl/pkg/util/completion) would need k8s.io/kubectl, which is
// not a dependency of this module and would bring kubectl's get and
// api-resources commands into the plugin; these few functions do the same
// with the discovery and metadata clients the plugin already has.

// completionTimeout bounds the API calls of one completion: a shell waits
// for the answer.
const completionTimeout = 5 * time.Second

// completeTypeName completes TYPE/NAME and TYPE NAME as kubectl does: the
// first word is a resource type (kubectl api-resources -o name), a word
// after TYPE or after "TYPE/" the names of that type in the namespace.
func completeTypeName(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		directive := cobra.ShellCompDirectiveNoFileComp
		switch {
		case len(args) == 0 && strings.Contains(toComplete, "/"):
			typ, prefix, _ := strings.Cut(toComplete, "/")
			var out []string
			for _, n := range completeNames(flags, typ, prefix) {
				out = append(out, typ+"/"+n)
			}
			return out, directive
		case len(args) == 0:
			return completeTypes(flags, toComplete), directive
		case len(args) == 1 && !strings.Contains(args[0], "/"):
			return completeNames(flags, args[0], toComplete), directive
		}
		return nil, directive
	}
}

// completeTypes lists the resource types that can be read (get), as
// kubectl api-resources -o name prints them: "pods", "deployments.apps".
func completeTypes(flags *genericclioptions.ConfigFlags, prefix string) []string {
	// No cluster: nothing to complete, and no klog line from a discovery of
	// localhost:8080 in the middle of the user's command line.
	if checkClusterConfigured(flags) != nil {
		return nil
	}
	dc, err := flags.ToDiscoveryClient()
	if err != nil {
		return nil
	}
	lists, _ := dc.ServerPreferredResources()
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "get") {
				continue
			}
			name := r.Name
			if gv.Group != "" {
				name += "." + gv.Group
			}
			if strings.HasPrefix(name, prefix) {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// completeNames lists the names of the objects of typ in the namespace of
// the flags (or the kubeconfig's), from a metadata-only list.
func completeNames(flags *genericclioptions.ConfigFlags, typ, prefix string) []string {
	c, err := newCluster(flags)
	if err != nil {
		return nil
	}
	t, err := c.resolve(typ, "")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	items, errs := c.read.ListMeta(ctx, []kube.APIResource{{GVR: t.GVR, Kind: t.GVK.Kind, Namespaced: t.Namespaced}}, t.Namespace, "", 1)
	if len(errs) > 0 {
		return nil
	}
	var out []string
	for _, it := range items {
		if strings.HasPrefix(it.Obj.Name, prefix) {
			out = append(out, it.Obj.Name)
		}
	}
	sort.Strings(out)
	return out
}

// registerFlagCompletions completes kubectl's standard flags: -n from the
// cluster's namespaces, --context, --cluster and --user from the kubeconfig.
func registerFlagCompletions(root *cobra.Command, flags *genericclioptions.ConfigFlags) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		return completeNames(flags, "namespaces", prefix), cobra.ShellCompDirectiveNoFileComp
	})
	for _, what := range []string{"context", "cluster", "user"} {
		_ = root.RegisterFlagCompletionFunc(what, func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
			var out []string
			for _, n := range kubeconfigNames(flags, what) {
				if strings.HasPrefix(n, prefix) {
					out = append(out, n)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// kubeconfigNames lists the contexts, clusters or users of the kubeconfig.
func kubeconfigNames(flags *genericclioptions.ConfigFlags, what string) []string {
	cfg, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil
	}
	var out []string
	switch what {
	case "context":
		for n := range cfg.Contexts {
			out = append(out, n)
		}
	case "cluster":
		for n := range cfg.Clusters {
			out = append(out, n)
		}
	case "user":
		for n := range cfg.AuthInfos {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
