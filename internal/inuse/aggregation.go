/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"maps"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ClusterRole is what the index keeps of a ClusterRole: enough to know
// which ClusterRoles aggregate which. kube-controller-manager's
// clusterrole-aggregation controller copies the rules of every ClusterRole
// an aggregationRule selects into the aggregating one, and takes them out
// again when it goes: a pod bound to "admin" loses what a ClusterRole
// aggregated into admin granted the moment that ClusterRole is deleted. So
// a ClusterRole is in use by the pods bound to it or to any ClusterRole
// that aggregates it.
type ClusterRole struct {
	Name, ResourceVersion string
	// Labels are what aggregationRules select the ClusterRole by.
	Labels map[string]string
	// Selects are its aggregationRule's selectors; empty when it
	// aggregates nothing.
	Selects []labels.Selector
}

// GetObjectMeta lets the informer's store key the record (meta.Accessor).
func (r *ClusterRole) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: r.Name, ResourceVersion: r.ResourceVersion}
}

// ClusterRoleOf reduces a ClusterRole to what the index keeps. A selector
// the API server would not have admitted selects nothing, as the
// aggregation controller, which fails on it, aggregates nothing through it;
// an empty one, if admitted, selects every ClusterRole, as it would for
// that controller (holding more is the safe side).
func ClusterRoleOf(cr *rbacv1.ClusterRole) *ClusterRole {
	r := &ClusterRole{Name: cr.Name, ResourceVersion: cr.ResourceVersion}
	if len(cr.Labels) > 0 {
		r.Labels = maps.Clone(cr.Labels)
	}
	if cr.AggregationRule != nil {
		for i := range cr.AggregationRule.ClusterRoleSelectors {
			if s, err := metav1.LabelSelectorAsSelector(&cr.AggregationRule.ClusterRoleSelectors[i]); err == nil {
				r.Selects = append(r.Selects, s)
			}
		}
	}
	return r
}

// equal reports whether two records aggregate alike.
func (r *ClusterRole) equal(o *ClusterRole) bool {
	return r.Name == o.Name && maps.Equal(r.Labels, o.Labels) &&
		slices.EqualFunc(r.Selects, o.Selects, func(a, b labels.Selector) bool { return a.String() == b.String() })
}

// selects reports whether r's aggregationRule selects o.
func (r *ClusterRole) selects(o *ClusterRole) bool {
	set := labels.Set(o.Labels)
	for _, s := range r.Selects {
		if s.Matches(set) {
			return true
		}
	}
	return false
}

// aggregators returns the ClusterRoles that aggregate name, directly or
// through others (an aggregated ClusterRole may itself be selected), each
// mapped to the one it aggregates on the way; name itself is not among
// them.
func aggregators(roles []any, name string) map[string]string {
	byName := make(map[string]*ClusterRole, len(roles))
	for _, obj := range roles {
		if r, ok := obj.(*ClusterRole); ok {
			byName[r.Name] = r
		}
	}
	via := map[string]string{}
	frontier := []string{name}
	for len(frontier) > 0 {
		aggregated := byName[frontier[0]]
		frontier = frontier[1:]
		if aggregated == nil {
			continue
		}
		for _, r := range byName {
			if _, seen := via[r.Name]; seen || r.Name == name || !r.selects(aggregated) {
				continue
			}
			via[r.Name] = aggregated.Name
			frontier = append(frontier, r.Name)
		}
	}
	return via
}
