/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Causes of this family (see report.go).
const (
	CauseTeardownStep = "TeardownPolicyStep"
)

// Policy is a TeardownPolicy or ClusterTeardownPolicy, read without the
// Go types so the engine works with any served version.
type Policy struct {
	Ref       ObjectRef
	Finalizer string
	Steps     []string
	// UnusedSteps names the steps that are unused steps (kubectl teardown
	// plan says who would hold the object).
	UnusedSteps []string
}

// Policies are the Teardown policies of the cluster, read once per run.
func (c *Cluster) Policies(ctx context.Context) []Policy {
	c.doOnce("policies", func() {
		for _, gvr := range []schema.GroupVersionResource{gvrPolicy, gvrClusterPolicy} {
			l, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, p := range l.Items {
				fin, _, _ := unstructured.NestedString(p.Object, "spec", "finalizer")
				if fin == "" {
					fin, _, _ = unstructured.NestedString(p.Object, "status", "finalizer")
				}
				steps, _, _ := unstructured.NestedSlice(p.Object, "spec", "steps")
				var names, unused []string
				for _, s := range steps {
					if m, ok := s.(map[string]any); ok {
						if n, ok := m["name"].(string); ok {
							names = append(names, n)
							if _, ok := m["unused"]; ok {
								unused = append(unused, n)
							}
						}
					}
				}
				c.policies = append(c.policies, Policy{
					Ref:       ObjectRef{APIVersion: p.GetAPIVersion(), Kind: p.GetKind(), Resource: gvr.Resource, Namespace: p.GetNamespace(), Name: p.GetName()},
					Finalizer: fin, Steps: names, UnusedSteps: unused,
				})
			}
		}
	})
	return c.policies
}
