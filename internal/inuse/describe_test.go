/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescribe(t *testing.T) {
	agent := func(i int, deleting bool) *Pod {
		return &Pod{Namespace: "agents", Name: fmt.Sprintf("node-agent-%d", i), OwnerKind: "DaemonSet", OwnerName: "node-agent", Deleting: deleting}
	}
	bare := func(name string) *Pod { return &Pod{Namespace: "agents", Name: name} }
	cases := []struct {
		name string
		kind string
		use  Use
		want string
	}{
		{
			name: "one controller's pods, some terminating",
			kind: "ServiceAccount",
			use:  Use{Pods: []*Pod{agent(0, true), agent(1, false)}},
			want: "2 pods of DaemonSet agents/node-agent still run as this ServiceAccount (1 terminating)",
		},
		{
			name: "one pod of a controller",
			kind: "Secret",
			use:  Use{Pods: []*Pod{agent(0, false)}},
			want: "pod agents/node-agent-0 of DaemonSet agents/node-agent still uses this Secret",
		},
		{
			name: "a pod without a controller",
			kind: "ConfigMap",
			use:  Use{Pods: []*Pod{bare("debug")}},
			want: "pod agents/debug still uses this ConfigMap",
		},
		{
			name: "largest groups first, at most three named",
			kind: "ClusterRole",
			use: Use{Pods: []*Pod{bare("a"), agent(0, false), bare("b"), agent(1, true), bare("c"), bare("d")},
				Through: []string{"ClusterRoleBinding node-agent", "RoleBinding agents/extra"}},
			want: "2 pods of DaemonSet agents/node-agent, pod agents/a, pod agents/b and 2 more pods still run with this ClusterRole's rights " +
				"(through ClusterRoleBinding node-agent, RoleBinding agents/extra) (1 terminating)",
		},
		{
			name: "a binding",
			kind: "RoleBinding",
			use:  Use{Pods: []*Pod{bare("a"), bare("b")}},
			want: "pod agents/a and pod agents/b still run as a subject of this RoleBinding",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Describe(tc.kind, &tc.use)); diff != "" {
				t.Errorf("Describe (-want +got):\n%s", diff)
			}
		})
	}
}

// namespaceReader may list one namespace: steps.Audience's rule, restated
// so that this package's test does not import the controller's steps.
type namespaceReader string

func (r namespaceReader) MayName(ns string) bool { return ns == string(r) }
func (r namespaceReader) Elsewhere() string      { return "outside namespace " + string(r) }

// TestDescribeFor: a reader of namespace web is told the names of web's
// pods and bindings only; those of other namespaces and cluster-scoped
// bindings are counted (issue 16: a tenant's RoleBinding to another
// namespace's ServiceAccounts).
func TestDescribeFor(t *testing.T) {
	pod := func(ns, name, owner string, deleting bool) *Pod {
		p := &Pod{Namespace: ns, Name: name, Deleting: deleting}
		if owner != "" {
			p.OwnerKind, p.OwnerName = "Deployment", owner
		}
		return p
	}
	web := pod("web", "web-0", "web", false)
	billing0, billing1 := pod("billing", "billing-0", "billing", true), pod("billing", "billing-1", "billing", false)
	cases := []struct {
		name string
		kind string
		use  Use
		want string
	}{
		{
			name: "only pods of another namespace",
			kind: "RoleBinding",
			use:  Use{Pods: []*Pod{billing0, billing1}},
			want: "2 pods outside namespace web still run as a subject of this RoleBinding (1 terminating)",
		},
		{
			name: "one outside",
			kind: "RoleBinding",
			use:  Use{Pods: []*Pod{billing1}},
			want: "1 pod outside namespace web still runs as a subject of this RoleBinding",
		},
		{
			name: "the reader's own pods named, the others counted",
			kind: "RoleBinding",
			use:  Use{Pods: []*Pod{billing0, billing1, web}},
			want: "pod web/web-0 of Deployment web/web and 2 pods outside namespace web still run as a subject of this RoleBinding (1 terminating)",
		},
		{
			name: "only the reader's own pods: as Describe says it",
			kind: "RoleBinding",
			use:  Use{Pods: []*Pod{web}},
			want: "pod web/web-0 of Deployment web/web still runs as a subject of this RoleBinding",
		},
		{
			name: "bindings of other namespaces or of the cluster counted",
			kind: "ClusterRole",
			use: Use{Pods: []*Pod{billing1, web}, Through: []string{"ClusterRoleBinding billing", "RoleBinding billing/read", "RoleBinding web/read"},
				GrantedIn: map[string]string{"ClusterRoleBinding billing": "", "RoleBinding billing/read": "billing", "RoleBinding web/read": "web"}},
			want: "pod web/web-0 of Deployment web/web and 1 pod outside namespace web still run with this ClusterRole's rights " +
				"(through RoleBinding web/read and 2 bindings outside namespace web)",
		},
		{
			name: "a binding of unknown namespace counts as outside",
			kind: "Role",
			use:  Use{Pods: []*Pod{web}, Through: []string{"RoleBinding web/read"}},
			want: "pod web/web-0 of Deployment web/web still runs with this Role's rights (through 1 binding outside namespace web)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DescribeFor(tc.kind, &tc.use, namespaceReader("web"))); diff != "" {
				t.Errorf("DescribeFor (-want +got):\n%s", diff)
			}
		})
	}
}
