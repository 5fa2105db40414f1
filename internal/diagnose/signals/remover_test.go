/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
)

// TestMatchRemover: family 4 of the scenarios, from real threads.
func TestMatchRemover(t *testing.T) {
	deploy := func(doc string) Workload { return DeploymentWorkload(typed[appsv1.Deployment](t, doc)) }
	capi := []Workload{
		deploy(`{metadata: {name: capi-controller-manager, namespace: capi-system, labels: {cluster.x-k8s.io/provider: cluster-api}}, spec: {template: {spec: {serviceAccountName: capi-manager, containers: [{name: manager, image: registry.k8s.io/cluster-api/cluster-api-controller:v1.8.0, command: [/manager], args: [--leader-elect]}]}}}}`),
		deploy(`{metadata: {name: capa-controller-manager, namespace: capa-system, labels: {cluster.x-k8s.io/provider: infrastructure-aws}}, spec: {template: {spec: {serviceAccountName: capa-controller-manager, containers: [{name: manager, image: registry.k8s.io/cluster-api-aws/cluster-api-aws-controller:v2.2.4, command: [/manager]}]}}}}`),
		deploy(`{metadata: {name: capi-kubeadm-bootstrap-controller-manager, namespace: capi-kubeadm-bootstrap-system}, spec: {template: {spec: {serviceAccountName: capi-kubeadm-bootstrap-manager, containers: [{name: manager, image: registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v1.8.0, command: [/manager]}]}}}}`),
	}
	capiRights := func(ns, sa, group string) (bool, bool) {
		return group == "infrastructure.cluster.x-k8s.io" && sa == "capa-controller-manager" || group == "cluster.x-k8s.io" && sa == "capi-manager", true
	}
	cases := map[string]struct {
		thread    string
		manager   string
		group     string
		workloads []Workload
		may       Rights
		want      []string
	}{
		"three Cluster API controllers built as manager: the finalizer's group picks the AWS provider": {
			thread:    "https://github.com/kubernetes-sigs/cluster-api-provider-aws/issues/4584",
			manager:   "manager",
			group:     "infrastructure.cluster.x-k8s.io",
			workloads: capi,
			may:       capiRights,
			want:      []string{"Deployment capa-system/capa-controller-manager certain: container manager runs /manager; container manager; its name; its ServiceAccount capa-controller-manager may patch infrastructure.cluster.x-k8s.io"},
		},
		"the same without the rights: all three run manager, none is chosen": {
			thread:    "https://github.com/kubernetes-sigs/cluster-api-provider-aws/issues/4584",
			manager:   "manager",
			group:     "infrastructure.cluster.x-k8s.io",
			workloads: capi,
			want: []string{
				"Deployment capa-system/capa-controller-manager ambiguous: container manager runs /manager; container manager; its name",
				"Deployment capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-controller-manager ambiguous: container manager runs /manager; container manager; its name",
				"Deployment capi-system/capi-controller-manager ambiguous: container manager runs /manager; container manager; its name",
			},
		},
		"a Crossplane provider found by its command, its Deployment named by a hash": {
			thread:  "https://github.com/crossplane-contrib/provider-helm/issues/102",
			manager: "crossplane-helm-provider",
			group:   "helm.crossplane.io",
			workloads: []Workload{
				deploy(`{metadata: {name: crossplane-contrib-provider-helm-1a2b3c, namespace: crossplane-system, labels: {pkg.crossplane.io/provider: provider-helm}}, spec: {template: {spec: {serviceAccountName: provider-helm-1a2b3c, containers: [{name: package-runtime, image: xpkg.upbound.io/crossplane-contrib/provider-helm:v0.9.0, command: [crossplane-helm-provider], args: [--debug]}]}}}}`),
				deploy(`{metadata: {name: crossplane, namespace: crossplane-system}, spec: {template: {spec: {serviceAccountName: crossplane, containers: [{name: core, image: xpkg.upbound.io/crossplane/crossplane:v1.14.0, args: [core, start]}]}}}}`),
			},
			may:  func(ns, sa, group string) (bool, bool) { return strings.HasPrefix(sa, "provider-helm"), true },
			want: []string{"Deployment crossplane-system/crossplane-contrib-provider-helm-1a2b3c certain: container package-runtime runs crossplane-helm-provider; its ServiceAccount provider-helm-1a2b3c may patch helm.crossplane.io"},
		},
		"Envoy Gateway uninstalled: istiod may patch the group but runs no envoy-gateway, so nothing is named": {
			thread:  "https://github.com/envoyproxy/gateway/issues/7287",
			manager: "envoy-gateway",
			group:   "gateway.networking.k8s.io",
			workloads: []Workload{
				deploy(`{metadata: {name: istiod, namespace: istio-system, labels: {app: istiod}}, spec: {template: {spec: {serviceAccountName: istiod, containers: [{name: discovery, image: docker.io/istio/pilot:1.24.0, args: [discovery]}]}}}}`),
			},
			may:  func(ns, sa, group string) (bool, bool) { return true, true },
			want: nil,
		},
		"Envoy Gateway deployed by the Tigera operator, found by image and name": {
			thread:  "https://github.com/tigera/operator/pull/5292",
			manager: "envoy-gateway",
			group:   "gateway.networking.k8s.io",
			workloads: []Workload{
				deploy(`{metadata: {name: envoy-gateway, namespace: tigera-gateway, labels: {app.kubernetes.io/name: gateway-helm}}, spec: {template: {spec: {serviceAccountName: envoy-gateway, containers: [{name: envoy-gateway, image: docker.io/envoyproxy/gateway:v1.5.0, args: [server, --config-path=/config/envoy-gateway.yaml]}]}}}}`),
				deploy(`{metadata: {name: tigera-operator, namespace: tigera-operator}, spec: {template: {spec: {serviceAccountName: tigera-operator, containers: [{name: tigera-operator, image: quay.io/tigera/operator:v1.38.0, command: [operator]}]}}}}`),
			},
			may:  func(ns, sa, group string) (bool, bool) { return true, true },
			want: []string{"Deployment tigera-gateway/envoy-gateway certain: container envoy-gateway's image docker.io/envoyproxy/gateway:v1.5.0; its name; ServiceAccount envoy-gateway; its ServiceAccount envoy-gateway may patch gateway.networking.k8s.io"},
		},
		"kubectl and client libraries name no controller": {
			manager:   "kubectl-edit",
			workloads: capi,
			want:      nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, m := range MatchRemover(tc.manager, tc.group, tc.workloads, tc.may) {
				got = append(got, fmt.Sprintf("%s %s: %s", m.Workload.Ref, m.Confidence, strings.Join(m.Why, "; ")))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: MatchRemover() -want +got:\n%s", tc.thread, diff)
			}
		})
	}
}

// TestLeasesOf: the liveness of the Cluster API AWS provider is kept in a
// Lease named after the component (controller-leader-elect-capa), not the
// binary (manager); its holder names the pod.
func TestLeasesOf(t *testing.T) {
	w := Workload{Ref: Ref{Kind: "Deployment", Namespace: "capa-system", Name: "capa-controller-manager"}}
	lease := func(name, holder string, renewed time.Duration) *coordinationv1.Lease {
		return typed[coordinationv1.Lease](t, fmt.Sprintf(`{metadata: {name: %s, namespace: capa-system}, spec: {holderIdentity: %q, leaseDurationSeconds: 15, renewTime: %q}}`,
			name, holder, now.Add(-renewed).Format("2006-01-02T15:04:05.000000Z07:00")))
	}
	leases := []*coordinationv1.Lease{
		lease("other", "some-other-7d9f-abcde_1", time.Second),
		lease("controller-leader-elect-capa", "capa-controller-manager-6f7c9d-x2x9z_0b1c", 4*time.Second),
	}
	vs := LeasesOf(w, leases, now)
	if len(vs) != 1 || vs[0].Lease.String() != "Lease capa-system/controller-leader-elect-capa" || vs[0].Pod != "capa-controller-manager-6f7c9d-x2x9z" || vs[0].Expired {
		t.Errorf("LeasesOf = %v; want the component-named Lease, fresh", vs)
	}
	vs = LeasesOf(w, []*coordinationv1.Lease{lease("controller-leader-elect-capa", "capa-controller-manager-6f7c9d-x2x9z_0b1c", 10*time.Minute)}, now)
	if len(vs) != 1 || !vs[0].Expired || vs[0].Renewed != 10*time.Minute {
		t.Errorf("LeasesOf = %v; want expired, renewed 10m ago", vs)
	}
}
