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
