/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package testenv

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Access is a question for the authorizer: may subject kind (User or
// ServiceAccount) namespace/name, with the groups the API server gives it,
// do attrs?
func Access(kind, namespace, name string, attrs authorizationv1.ResourceAttributes) authorizationv1.SubjectAccessReviewSpec {
	if kind == rbacv1.ServiceAccountKind {
		return authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:" + namespace + ":" + name,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &attrs}
	}
	return authorizationv1.SubjectAccessReviewSpec{User: name, Groups: []string{"system:authenticated"}, ResourceAttributes: &attrs}
}

// WaitAllowed returns once the API server's authorizer answers yes to
// access. RBAC reaches the authorizer through an informer, so a
// binding just created may be refused for a moment: a test that grants and
// then acts must wait, or it fails now and then on a Forbidden that is not
// the one it tests.
func WaitAllowed(ctx context.Context, cs kubernetes.Interface, access authorizationv1.SubjectAccessReviewSpec) error {
	return waitAllowed(ctx, func(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
		return cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	}, access)
}

// WaitAllowedClient is WaitAllowed through a controller-runtime client.
func WaitAllowedClient(ctx context.Context, c client.Client, access authorizationv1.SubjectAccessReviewSpec) error {
	return waitAllowed(ctx, reviewClient(c), access)
}

// WaitDeniedClient returns once the API server's authorizer answers no to
// access: a binding just deleted may still grant for a moment.
func WaitDeniedClient(ctx context.Context, c client.Client, access authorizationv1.SubjectAccessReviewSpec) error {
	return waitAnswer(ctx, reviewClient(c), access, false)
}

// reviewClient asks c's API server for a SubjectAccessReview.
func reviewClient(c client.Client) func(context.Context, *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	return func(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
		return sar, c.Create(ctx, sar)
	}
}

func waitAllowed(ctx context.Context, review func(context.Context, *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error),
	access authorizationv1.SubjectAccessReviewSpec) error {
	return waitAnswer(ctx, review, access, true)
}

func waitAnswer(ctx context.Context, review func(context.Context, *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error),
	access authorizationv1.SubjectAccessReviewSpec, allowed bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last string
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := review(ctx, &authorizationv1.SubjectAccessReview{Spec: access})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = got.Status.Reason
		return got.Status.Allowed == allowed, nil
	})
	if err != nil {
		may := "may"
		if !allowed {
			may = "may not"
		}
		return fmt.Errorf("waiting until %s %s %s: %w (last: %s)", access.User, may, describe(access), err, last)
	}
	return nil
}

func describe(access authorizationv1.SubjectAccessReviewSpec) string {
	if a := access.NonResourceAttributes; a != nil {
		return a.Verb + " " + a.Path
	}
	a := access.ResourceAttributes
	return fmt.Sprintf("%s %s.%s %q in %q", a.Verb, a.Resource, a.Group, a.Name, a.Namespace)
}
