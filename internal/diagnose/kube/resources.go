/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// APIResource is one listable resource type.
type APIResource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Verbs      []string
}

// APIVersion is the resource's group/version.
func (r APIResource) APIVersion() string { return r.GVR.GroupVersion().String() }

// resources is discovery's answer, once per run.
type resources struct {
	list []APIResource
	// err names the groups whose discovery failed.
	err error
}

// Resources is every listable resource type at its preferred version,
// discovered once per run; the error, when the list is not nil, names the
// groups whose discovery failed and is informational.
func (c *Cluster) Resources() ([]APIResource, error) {
	r, _ := cached(c, "resources", func() (resources, error) {
		list, err := c.discoverResources()
		return resources{list: list, err: err}, nil
	})
	return r.list, r.err
}

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
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			out = append(out, APIResource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, Verbs: r.Verbs})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GVR.String() < out[j].GVR.String() })
	return out, partial
}
