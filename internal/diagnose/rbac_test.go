/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRBACGrant(t *testing.T) {
	cases := []struct {
		sa, ns string
		gvr    schema.GroupVersionResource
		want   string
	}{
		{"op", "shop", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			"kubectl create role op-finalizers -n shop --verb=patch,update --resource=configmaps && kubectl create rolebinding op-finalizers -n shop --role=op-finalizers --serviceaccount=ops:op"},
		{"op", "", schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"},
			"kubectl create clusterrole op-finalizers --verb=patch,update --resource=volumeattachments.storage.k8s.io && kubectl create clusterrolebinding op-finalizers --clusterrole=op-finalizers --serviceaccount=ops:op"},
		{"default", "shop", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			"give the owner a ServiceAccount of its own (it runs as ops/default, shared by every pod there that names none), then grant that one patch and update on configmaps"},
	}
	for _, c := range cases {
		if got := rbacGrant("ops", c.sa, c.gvr, c.ns); got != c.want {
			t.Errorf("rbacGrant(%s, %s) = %q, want %q", c.sa, c.gvr, got, c.want)
		}
	}
}
