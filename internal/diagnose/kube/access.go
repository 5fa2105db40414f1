/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AccessReview asks the authorizer, once per run and question, whether
// user (in groups) may do attrs.
func (c *Cluster) AccessReview(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (authorizationv1.SubjectAccessReviewStatus, error) {
	key := fmt.Sprintf("sar/%s/%s/%s/%s/%s/%s/%s", user, attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace, attrs.Name, strings.Join(groups, ","))
	return cached(c, key, func() (authorizationv1.SubjectAccessReviewStatus, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}
		got, err := c.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return authorizationv1.SubjectAccessReviewStatus{}, err
		}
		return got.Status, nil
	})
}

// bulkNamedReviews is how many objects a Bulk run asks about by name, per
// identity, verb, resource and namespace, once the question about all of
// them was denied. A grant by resourceNames would otherwise be missed and a
// running owner wrongly called unable to remove its finalizer; past the
// first few objects all denied by name, one granted by name is unlikely
// enough that status keeps its requests from growing with the objects.
const bulkNamedReviews = 8

// MayAskByName says whether to ask about one object by name after attrs,
// asked for user about every object of its namespace, was denied: always
// for explain, within bulkNamedReviews for status (Bulk).
func (c *Cluster) MayAskByName(user string, attrs authorizationv1.ResourceAttributes) bool {
	if !c.bulk {
		return true
	}
	key := strings.Join([]string{user, attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace}, "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.namedReviews == nil {
		c.namedReviews = map[string]int{}
	}
	if c.namedReviews[key] >= bulkNamedReviews {
		return false
	}
	c.namedReviews[key]++
	return true
}
