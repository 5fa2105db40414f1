/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/diagnose"
)

// TestWaitScope: where plan looks for a step's resource, as the controller
// does (internal/steps, listOptions).
func TestWaitScope(t *testing.T) {
	deployment := diagnose.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ops", Name: "op"}
	namespace := diagnose.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "shop"}
	clusterRole := diagnose.ObjectRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "op"}
	cluster, tenant := stepPolicy{}, stepPolicy{namespace: "shop"}
	red := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "red"}}
	for name, tc := range map[string]struct {
		p                 stepPolicy
		namespaceSelector *metav1.LabelSelector
		clusterScopedKind bool
		target            diagnose.ObjectRef
		wantNS, wantScope string
		wantFilter        bool
	}{
		"a TeardownPolicy: its namespace":                   {p: tenant, target: deployment, wantNS: "shop", wantScope: "namespace shop"},
		"unset: the target's namespace":                     {p: cluster, target: deployment, wantNS: "ops", wantScope: "namespace ops"},
		"unset on a Namespace: inside it":                   {p: cluster, target: namespace, wantNS: "shop", wantScope: "namespace shop"},
		"unset on a cluster-scoped target: all":             {p: cluster, target: clusterRole, wantScope: "every namespace"},
		"{}: every namespace":                               {p: cluster, target: deployment, namespaceSelector: &metav1.LabelSelector{}, wantScope: "every namespace"},
		"labels: the matching namespaces":                   {p: cluster, target: deployment, namespaceSelector: red, wantScope: "namespaces matching team=red", wantFilter: true},
		"a cluster-scoped kind: cluster-wide":               {p: cluster, target: deployment, clusterScopedKind: true, wantScope: "cluster-wide"},
		"a TeardownPolicy: its namespace, whatever it says": {p: tenant, target: deployment, namespaceSelector: red, wantNS: "shop", wantScope: "namespace shop"},
	} {
		t.Run(name, func(t *testing.T) {
			res := teardownv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{}, NamespaceSelector: tc.namespaceSelector}
			ns, filter, scope, err := waitScope(tc.p, res, !tc.clusterScopedKind, tc.target)
			if err != nil || ns != tc.wantNS || scope != tc.wantScope || (filter != nil) != tc.wantFilter {
				t.Errorf("waitScope = %q, %v, %q, %v; want %q, filter %t, %q", ns, filter, scope, err, tc.wantNS, tc.wantFilter, tc.wantScope)
			}
		})
	}
}
