/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The garbage collector's message, as TestExplainVanished
// (test/plugin/chains) records it from kube-controller-manager 1.36.
func TestInvalidOwnerRef(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want []string
	}{
		{`ownerRef [v1/ConfigMap, namespace: web-5, name: frontend, uid: 3a49d248-96cb-4e17-9d1b-f4bd7b72317e] does not exist in namespace "web-5"`,
			[]string{"v1/ConfigMap", "3a49d248-96cb-4e17-9d1b-f4bd7b72317e"}},
		{`ownerRef [apps/v1/Deployment, namespace: shop, name: web, uid: 1234] does not exist in namespace "shop"`, []string{"apps/v1/Deployment", "1234"}},
		{"something else", nil},
	} {
		var got []string
		if m := invalidOwnerRef.FindStringSubmatch(tc.msg); m != nil {
			got = m[1:]
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.msg, diff)
		}
	}
}

// FuzzInvalidOwnerRef: the garbage collector's Event message is read, never
// trusted to be well formed.
func FuzzInvalidOwnerRef(f *testing.F) {
	f.Add(`ownerRef [v1/ConfigMap, namespace: web-5, name: frontend, uid: 3a49d248-96cb-4e17-9d1b-f4bd7b72317e] does not exist in namespace "web-5"`)
	f.Add(`ownerRef [apps/v1/Deployment, namespace: , name: x, uid: ] does not exist`)
	f.Fuzz(func(t *testing.T, msg string) {
		if m := invalidOwnerRef.FindStringSubmatch(msg); m != nil && (len(m) != 3 || m[2] == "") {
			t.Fatalf("match %q without a uid", m)
		}
	})
}
