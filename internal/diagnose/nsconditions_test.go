/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDiscoveryFailure(t *testing.T) {
	cases := []struct {
		name, msg string
		want      []string
	}{
		{"unable to handle", `Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.example.com/v1beta1: the server is currently unable to handle the request`, []string{"metrics.example.com/v1beta1"}},
		{"stale", `Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: agones.dev/v1: stale GroupVersion discovery: agones.dev/v1, custom.metrics.k8s.io/v1beta2: stale GroupVersion discovery: custom.metrics.k8s.io/v1beta2`, []string{"agones.dev/v1", "custom.metrics.k8s.io/v1beta2"}},
		{"none", "All resources successfully discovered", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, parseDiscoveryFailure(c.msg)); diff != "" {
				t.Errorf("parseDiscoveryFailure (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseContentRemaining(t *testing.T) {
	got := parseContentRemaining("Some resources are remaining: configmaps. has 2 resource instances, widgets.example.com has 1 resource instances")
	want := []RemainingResource{{Resource: "configmaps", Group: "", Count: 2}, {Resource: "widgets", Group: "example.com", Count: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseContentRemaining (-want +got):\n%s", diff)
	}
}

func TestParseFinalizersRemaining(t *testing.T) {
	cases := []struct {
		name, msg string
		want      map[string]int
	}{
		{"current", "Some content in the namespace has finalizers remaining: example.com/a in 2 resource instances, kubernetes.io/pvc-protection in 1 resource instances", map[string]int{"example.com/a": 2, "kubernetes.io/pvc-protection": 1}},
		{"older", "Some finalizers are remaining: example.com/a in 3 resource instances", map[string]int{"example.com/a": 3}},
		{"no colon", "ContentRemoved", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, parseFinalizersRemaining(c.msg)); diff != "" {
				t.Errorf("parseFinalizersRemaining (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWebhookNames(t *testing.T) {
	msg := `Failed to delete all resource types, 1 remaining: Internal error occurred: failed calling webhook "deny.example.com": failed to call webhook: Post "https://127.0.0.1:1/x": dial tcp 127.0.0.1:1: connect: connection refused; admission webhook "policy.example.com" denied the request: no`
	want := []string{"deny.example.com", "policy.example.com"}
	if diff := cmp.Diff(want, parseWebhookNames(msg)); diff != "" {
		t.Errorf("parseWebhookNames (-want +got):\n%s", diff)
	}
}

func TestLookupCatalog(t *testing.T) {
	cases := []struct {
		fin, kind, wantComponent string
		found                    bool
	}{
		{"kubernetes", "Namespace", "namespace controller (kube-controller-manager)", true},
		{"kubernetes", "ConfigMap", "", false},
		{"external-attacher/ebs-csi-aws-com", "PersistentVolume", "CSI external-attacher", true},
		{"customresourcecleanup.apiextensions.k8s.io", "CustomResourceDefinition", "CRD finalizer (kube-apiserver)", true},
		{"resources-finalizer.argocd.argoproj.io/background", "Application", "Argo CD application controller", true},
		{"example.com/nobody", "ConfigMap", "", false},
	}
	for _, c := range cases {
		e, ok := lookupCatalog(c.fin, c.kind)
		if ok != c.found || e.Component != c.wantComponent {
			t.Errorf("lookupCatalog(%q, %q) = %q, %v; want %q, %v", c.fin, c.kind, e.Component, ok, c.wantComponent, c.found)
		}
	}
}

func TestGroupMatchesDomain(t *testing.T) {
	cases := []struct {
		group, domain string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"widgets.example.com", "example.com", false},
		{"example.com", "cleanup.example.com", true},
		{"example.org", "example.com", false},
		{"", "example.com", false},
	}
	for _, c := range cases {
		if got := groupMatchesDomain(c.group, c.domain); got != c.want {
			t.Errorf("groupMatchesDomain(%q, %q) = %v, want %v", c.group, c.domain, got, c.want)
		}
	}
}
