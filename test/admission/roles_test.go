/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admission

import (
	"os"
	"path/filepath"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestAggregatedRolesHandTeamsTheirPolicies: with the shipped teardown-view
// and teardown-edit ClusterRoles installed, the built-in namespace roles
// grant TeardownPolicies of their namespace (view reads, edit and admin
// write), and nothing grants ClusterTeardownPolicies, another namespace's
// policies, or the status the controller writes. Without them (the negative
// control, checked first), edit grants no TeardownPolicy at all.
func TestAggregatedRolesHandTeamsTheirPolicies(t *testing.T) {
	testenv.SkipShort(t)
	ns, other := newNamespace(t), newNamespace(t)
	for user, role := range map[string]string{"team-viewer": "view", "team-editor": "edit", "team-admin": "admin"} {
		_, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The binding reaches the authorizer through an informer.
		if err := testenv.WaitAllowed(t.Context(), admin, testenv.Access(rbacv1.UserKind, "", user,
			authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "configmaps"})); err != nil {
			t.Fatal(err)
		}
	}
	policies := func(ns, verb string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: "teardown.dev", Resource: "teardownpolicies"}
	}
	may := func(user string, attrs authorizationv1.ResourceAttributes) bool {
		t.Helper()
		sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: testenv.Access(rbacv1.UserKind, "", user, attrs)}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	if may("team-editor", policies(ns, "create")) {
		t.Fatal("edit grants TeardownPolicies before the shipped roles are installed: the test proves nothing")
	}

	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"teardownpolicy_view_role.yaml", "teardownpolicy_edit_role.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "config", "rbac", file))
		if err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(data, role); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(t.Context(), role.Name, metav1.DeleteOptions{}) })
	}
	// kube-controller-manager's clusterrole-aggregation controller copies the
	// rules into view, edit and admin; the authorizer sees them a moment later.
	for _, ok := range []struct {
		user  string
		attrs authorizationv1.ResourceAttributes
	}{
		{"team-viewer", policies(ns, "list")},
		{"team-editor", policies(ns, "create")},
		{"team-editor", policies(ns, "delete")},
		{"team-admin", policies(ns, "patch")},
	} {
		if err := testenv.WaitAllowed(t.Context(), admin, testenv.Access(rbacv1.UserKind, "", ok.user, ok.attrs)); err != nil {
			t.Fatal(err)
		}
	}
	for _, no := range []struct {
		user  string
		attrs authorizationv1.ResourceAttributes
	}{
		{"team-viewer", policies(ns, "create")},
		{"team-editor", policies(other, "create")},
		{"team-editor", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Group: "teardown.dev", Resource: "teardownpolicies", Subresource: "status"}},
		{"team-admin", authorizationv1.ResourceAttributes{Verb: "create", Group: "teardown.dev", Resource: "clusterteardownpolicies"}},
		{"team-admin", authorizationv1.ResourceAttributes{Verb: "list", Group: "teardown.dev", Resource: "clusterteardownpolicies"}},
	} {
		if may(no.user, no.attrs) {
			t.Errorf("%s may %s %s/%s in %q", no.user, no.attrs.Verb, no.attrs.Resource, no.attrs.Subresource, no.attrs.Namespace)
		}
	}
}
