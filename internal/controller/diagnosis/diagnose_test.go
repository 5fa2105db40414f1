/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// TestTenantView: a TeardownPolicy's diagnosis names nothing outside its
// namespace: a blocker elsewhere, cluster-scoped, or whose finalizer's
// owner runs elsewhere becomes OutsideNamespace without any of its text.
func TestTenantView(t *testing.T) {
	cm := func(ns string) *teardownv1alpha1.ObjectReference {
		return &teardownv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "held"}
	}
	target := &metav1.ObjectMeta{Name: "settings", Namespace: "shop"}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	outside := diagnosis{cause: CauseOutsideNamespace,
		message: "the root cause lies outside namespace shop; a cluster admin can run: kubectl teardown explain configmap settings -n shop"}
	cases := map[string]struct {
		in, want diagnosis
	}{
		"blocker in the namespace": {
			in:   diagnosis{cause: "FinalizerOwnerGone", catalog: "B1", blocker: cm("shop"), message: "ConfigMap shop/held: example.com/never: gone"},
			want: diagnosis{cause: "FinalizerOwnerGone", catalog: "B1", blocker: cm("shop"), message: "ConfigMap shop/held: example.com/never: gone"},
		},
		"a failing step, no blocker": {
			in:   diagnosis{cause: CauseWebhookFailing, message: "step hook: transient: connection refused"},
			want: diagnosis{cause: CauseWebhookFailing, message: "step hook: transient: connection refused"},
		},
		"blocker in another namespace": {
			in:   diagnosis{cause: "FinalizerOwnerGone", blocker: cm("payments"), message: "ConfigMap payments/held: secret detail"},
			want: outside,
		},
		"cluster-scoped blocker": {
			in: diagnosis{cause: "APIServiceUnavailable", message: "APIService v1beta1.metrics.k8s.io is unavailable",
				blocker: &teardownv1alpha1.ObjectReference{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: "v1beta1.metrics.k8s.io"}},
			want: outside,
		},
		"owner runs in another namespace": {
			in: diagnosis{cause: "CleanupInProgress", blocker: cm("shop"), finalizer: "cert-manager.io/cleanup", ownerNamespace: "cert-manager",
				message: "ConfigMap shop/held: cert-manager.io/cleanup: Deployment cert-manager/cert-manager is down"},
			want: diagnosis{cause: CauseOutsideNamespace, blocker: cm("shop"), finalizer: "cert-manager.io/cleanup",
				message: "ConfigMap shop/held: cert-manager.io/cleanup: the finalizer's owner runs outside namespace shop; a cluster admin can run: kubectl teardown explain configmap settings -n shop"},
		},
		"owner runs in the namespace": {
			in:   diagnosis{cause: "CleanupInProgress", blocker: cm("shop"), ownerNamespace: "shop", message: "shop/operator is down"},
			want: diagnosis{cause: "CleanupInProgress", blocker: cm("shop"), ownerNamespace: "shop", message: "shop/operator is down"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tenantView(tc.in, "shop", gvk, target)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(diagnosis{})); diff != "" {
				t.Errorf("tenantView (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDiagnoseKinds(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []schema.GroupResource
		wantErr bool
	}{
		"empty":       {in: ""},
		"core":        {in: "namespaces", want: []schema.GroupResource{{Resource: "namespaces"}}},
		"with groups": {in: "namespaces, deployments.apps,,persistentvolumeclaims", want: []schema.GroupResource{{Resource: "namespaces"}, {Group: "apps", Resource: "deployments"}, {Resource: "persistentvolumeclaims"}}},
		"a kind path": {in: "apps/v1/deployments", wantErr: true},
		"a space":     {in: "name spaces", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseDiagnoseKinds(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseDiagnoseKinds(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseDiagnoseKinds(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
