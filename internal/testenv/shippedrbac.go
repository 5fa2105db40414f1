/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// AddShippedController adds a user bound to exactly the RBAC that config/
// ships for the controller, plus the sample grant for Services and
// ConfigMaps (aggregated by kube-controller-manager's clusterrole
// aggregation), and returns its credentials. admin creates the roles.
func (e *Env) AddShippedController(ctx context.Context, admin client.Client, root, user string) (*rest.Config, error) {
	cfg, err := e.AddUser(user)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"config/rbac/role.yaml", "config/rbac/targets_role.yaml", "config/samples/targets_clusterrole.yaml", "config/rbac/jobs_role.yaml"} {
		role := &rbacv1.ClusterRole{}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(data, role); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if err := admin.Create(ctx, role); err != nil {
			return nil, fmt.Errorf("creating %s: %w", f, err)
		}
		if strings.HasPrefix(f, "config/samples") || strings.HasSuffix(f, "jobs_role.yaml") {
			continue // granted through the aggregated role, or bound per namespace
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		if err := admin.Create(ctx, binding); err != nil {
			return nil, fmt.Errorf("binding %s: %w", role.Name, err)
		}
	}
	return cfg, nil
}
