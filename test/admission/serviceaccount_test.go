/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestPolicyAuthorMustBeAbleToActAsItsServiceAccount: a TeardownPolicy's
// steps act as the ServiceAccount it names, so creating one needs the right
// to impersonate that ServiceAccount. A user allowed only to write
// TeardownPolicies is refused; given impersonate on one ServiceAccount, they
// may name that one and no other; a namespace editor may name any.
func TestPolicyAuthorMustBeAbleToActAsItsServiceAccount(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	_, err := admin.RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "policy-writer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{teardownv1alpha1.GroupVersion.Group}, Resources: []string{"teardownpolicies"}, Verbs: []string{"*"}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	userClient := func(name string, roles ...rbacv1.RoleRef) client.Client {
		cfg, err := env.AddUser(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range roles {
			_, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}, RoleRef: ref,
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	writer := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "policy-writer"}
	writerOnly := userClient("policy-writer-only", writer)
	_, err = admin.RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "act-as-cleaner"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{"cleaner"}, Verbs: []string{"impersonate"}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cleanerOnly := userClient("policy-writer-cleaner", writer, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "act-as-cleaner"})
	editor := userClient("namespace-editor", writer, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"})
	for user, sa := range map[string]string{"policy-writer-cleaner": "cleaner", "namespace-editor": "admin"} {
		if err := testenv.WaitAllowed(t.Context(), admin, testenv.Access(rbacv1.UserKind, "", user, authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "impersonate", Resource: "serviceaccounts", Name: sa})); err != nil {
			t.Fatal(err)
		}
	}

	policy := func(name, sa string) *teardownv1alpha1.TeardownPolicy {
		return &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: teardownv1alpha1.TeardownPolicySpec{
			ServiceAccountName: sa,
			Targets:            []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{}}},
		}}
	}
	const refusal = "and you may not"
	// The policy may take a moment to reach the admission plugin: the first
	// case waits for it.
	var last error
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = writerOnly.Create(ctx, policy("probe", ""), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), refusal), nil
	})
	if err != nil {
		t.Fatalf("a user who may only write TeardownPolicies created one acting as default: %v", last)
	}
	if !strings.Contains(last.Error(), "ServiceAccount "+ns+"/default") {
		t.Errorf("refusal %q does not name the ServiceAccount", last)
	}
	cases := []struct {
		name    string
		as      client.Client
		sa      string
		refused bool
	}{
		{"writer names cleaner", writerOnly, "cleaner", true},
		{"writer with impersonate on cleaner names cleaner", cleanerOnly, "cleaner", false},
		{"writer with impersonate on cleaner names default", cleanerOnly, "", true},
		{"writer with impersonate on cleaner names admin", cleanerOnly, "admin", true},
		{"namespace editor names default", editor, "", false},
		{"namespace editor names admin", editor, "admin", false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.as.Create(t.Context(), policy("p"+string(rune('a'+i)), tc.sa))
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), refusal)):
				t.Errorf("created: %v, want refused", err)
			case !tc.refused && err != nil:
				t.Errorf("refused: %v", err)
			}
		})
	}
	// Changing the ServiceAccount of an existing policy is checked too.
	existing := &teardownv1alpha1.TeardownPolicy{}
	if err := cleanerOnly.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "pb"}, existing); err != nil {
		t.Fatal(err)
	}
	existing.Spec.ServiceAccountName = "admin"
	if err := cleanerOnly.Update(t.Context(), existing); err == nil || !strings.Contains(err.Error(), refusal) {
		t.Errorf("switching to ServiceAccount admin: %v, want refused", err)
	}
}
