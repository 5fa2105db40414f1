/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlatformOf(t *testing.T) {
	for _, tc := range []struct {
		fin, want string
	}{
		{"finalizer.managedresource.crossplane.io", "Crossplane"},
		{"composite.apiextensions.crossplane.io", "Crossplane"},
		{"acme.cert-manager.io/finalizer", "cert-manager"},
		{"finalizer.acme.cert-manager.io", "cert-manager"},
		{"controller.cattle.io/namespace-auth", "Rancher (or its Fleet, or the helm-controller of k3s and RKE2)"},
		{"wrangler.cattle.io/cattle-globalrole-sync", "Rancher (or its Fleet, or the helm-controller of k3s and RKE2)"},
		{"service.k8s.aws/resources", "the AWS controllers (AWS Load Balancer Controller, ACK, Karpenter on AWS)"},
		{"karpenter.k8s.aws/termination", "the AWS controllers (AWS Load Balancer Controller, ACK, Karpenter on AWS)"},
		{"resources-finalizer.argocd.argoproj.io", "Argo (CD, Workflows, Rollouts, Events)"},
		{"workflows.argoproj.io/artifact-gc", "Argo (CD, Workflows, Rollouts, Events)"},
		{"cluster.cluster.x-k8s.io", "Cluster API"},
		{"awscluster.infrastructure.cluster.x-k8s.io", "Cluster API"},
		// Kueue is a SIG project under x-k8s.io, not Cluster API's.
		{"kueue.x-k8s.io/managed", ""},
		// Not a platform's: a look-alike domain, a bare token, a built-in.
		{"example.com/cattle.io", ""},
		{"notcattle.io/x", ""},
		{"kubernetes", ""},
		{"kubernetes.io/pvc-protection", ""},
	} {
		got := ""
		if p, ok := platformOf(tc.fin); ok {
			got = p.Name
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("platformOf(%q) (-want +got):\n%s", tc.fin, diff)
		}
	}
}

func TestPlatformWorkload(t *testing.T) {
	aws, _ := platformOf("service.k8s.aws/resources")
	crossplane, _ := platformOf("finalizer.managedresource.crossplane.io")
	for _, tc := range []struct {
		name   string
		p      platform
		wl     string
		labels map[string]string
		want   bool
	}{
		{"by name", aws, "aws-load-balancer-controller", nil, true},
		{"by prefix", aws, "ack-s3-controller", nil, true},
		{"by name label", aws, "lbc", map[string]string{"app.kubernetes.io/name": "aws-load-balancer-controller"}, true},
		{"by a label key in its domain", crossplane, "provider-aws-s3-7e8f9a", map[string]string{"pkg.crossplane.io/revision": "provider-aws-s3-7e8f9a"}, true},
		{"another product", aws, "cert-manager", map[string]string{"app": "cert-manager"}, false},
		{"a name only beginning like it", crossplane, "crossplane-demo-app", nil, false},
	} {
		if got := platformWorkload(tc.p, tc.wl, tc.labels); got != tc.want {
			t.Errorf("%s: platformWorkload(%s, %q, %v) = %v, want %v", tc.name, tc.p.Name, tc.wl, tc.labels, got, tc.want)
		}
	}
}
