/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestReferrers: family 2 of the scenarios (in-use protections from real
// threads), and names that merely equal.
func TestReferrers(t *testing.T) {
	cases := map[string]struct {
		thread     string
		target     string
		candidates []string
		want       []string
	}{
		"GatewayClass in use by Gateways of any namespace": {
			thread: "https://github.com/tigera/operator/pull/5292",
			target: `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: tigera-gateway-class, uid: gc-1, finalizers: [gateway-exists-finalizer.gateway.networking.k8s.io]}}`,
			candidates: []string{
				`{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: web, namespace: shop, uid: g-1}, spec: {gatewayClassName: tigera-gateway-class, listeners: [{name: http, port: 80}]}}`,
				`{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: api, namespace: pay, uid: g-2, deletionTimestamp: "2026-11-28T11:00:00Z"}, spec: {gatewayClassName: tigera-gateway-class}}`,
				`{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: other, namespace: shop, uid: g-3}, spec: {gatewayClassName: istio}}`,
			},
			want: []string{
				"Gateway pay/api (spec.gatewayClassName, itself being deleted) certain",
				"Gateway shop/web (spec.gatewayClassName) certain",
			},
		},
		"Crossplane ProviderConfig named by managed resources' providerConfigRef": {
			thread: "https://github.com/crossplane-contrib/provider-helm/issues/102",
			target: `{apiVersion: helm.crossplane.io/v1beta1, kind: ProviderConfig, metadata: {name: helm-provider, uid: pc-1, finalizers: [in-use.crossplane.io]}}`,
			candidates: []string{
				`{apiVersion: helm.crossplane.io/v1beta1, kind: Release, metadata: {name: wordpress, uid: r-1}, spec: {providerConfigRef: {name: helm-provider}, forProvider: {chart: {name: wordpress}}}}`,
				`{apiVersion: helm.crossplane.io/v1beta1, kind: ProviderConfigUsage, metadata: {name: u-1, uid: u-1, labels: {crossplane.io/providerconfig: helm-provider}}, providerConfigRef: {name: helm-provider}}`,
			},
			want: []string{
				"Release wordpress (spec.providerConfigRef.name) certain",
				"ProviderConfigUsage u-1 (label crossplane.io/providerconfig) likely",
			},
		},
		"PVC kept as the source of a snapshot in progress; a pod of another namespace does not count": {
			thread: "https://github.com/kubernetes-csi/external-snapshotter/issues/349",
			target: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: quobyte-csi-test, namespace: default, uid: pvc-1, finalizers: [snapshot.storage.kubernetes.io/pvc-as-source-protection]}}`,
			candidates: []string{
				`{apiVersion: snapshot.storage.k8s.io/v1, kind: VolumeSnapshot, metadata: {name: test-snapshot-dynamic-provision, namespace: default, uid: s-1}, spec: {source: {persistentVolumeClaimName: quobyte-csi-test}}}`,
				`{apiVersion: v1, kind: Pod, metadata: {name: other, namespace: other, uid: p-1}, spec: {volumes: [{name: d, persistentVolumeClaim: {claimName: quobyte-csi-test}}]}}`,
				`{apiVersion: v1, kind: Pod, metadata: {name: user, namespace: default, uid: p-2}, spec: {volumes: [{name: d, persistentVolumeClaim: {claimName: quobyte-csi-test}}]}}`,
			},
			want: []string{
				"Pod default/user (spec.volumes[].persistentVolumeClaim.claimName) certain",
				"VolumeSnapshot default/test-snapshot-dynamic-provision (spec.source.persistentVolumeClaimName) certain",
			},
		},
		"MachineClass named by Machines' machineClassRef": {
			thread: "https://github.com/ironcore-dev/ironcore/issues/206",
			target: `{apiVersion: compute.ironcore.dev/v1alpha1, kind: MachineClass, metadata: {name: x3-xlarge, uid: mc-1}}`,
			candidates: []string{
				`{apiVersion: compute.ironcore.dev/v1alpha1, kind: Machine, metadata: {name: m1, namespace: a, uid: m-1}, spec: {machineClassRef: {name: x3-xlarge}, image: x3-xlarge}}`,
			},
			want: []string{"Machine a/m1 (spec.machineClassRef.name) certain"},
		},
		"a parent named by its dependents' ownerReference": {
			thread: "https://github.com/kubevirt/containerized-data-importer/issues/859",
			target: `{apiVersion: cdi.kubevirt.io/v1beta1, kind: DataVolume, metadata: {name: disk, namespace: vm, uid: dv-1}}`,
			candidates: []string{
				`{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: disk, namespace: vm, uid: pvc-9, ownerReferences: [{apiVersion: cdi.kubevirt.io/v1beta1, kind: DataVolume, name: disk, uid: dv-1, controller: true}]}}`,
			},
			want: []string{"PersistentVolumeClaim vm/disk (ownerReference (controller)) certain"},
		},
		"an HTTPRoute's parentRefs without a kind is a likely reference; with another kind it is none": {
			thread: "https://github.com/aws/aws-application-networking-k8s/issues/115",
			target: `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: my-hotel, namespace: default, uid: gw-1}}`,
			candidates: []string{
				`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: rates, namespace: default, uid: h-1}, spec: {parentRefs: [{name: my-hotel, sectionName: http}]}}`,
				`{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: mesh, namespace: default, uid: h-2}, spec: {parentRefs: [{name: my-hotel, kind: Service}]}}`,
			},
			want: []string{"HTTPRoute default/rates (spec.parentRefs[].name) likely"},
		},
		"names that merely equal the target's are not references": {
			target: `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: shop, uid: cm-1}}`,
			candidates: []string{
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop, uid: d-1, labels: {app: web}}, spec: {template: {spec: {containers: [{name: web, image: web}], hostname: web}}}}`,
			},
			want: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			refs, total := Referrers(TargetOf(obj(t, tc.target)), objs(t, tc.candidates...))
			var got []string
			for _, r := range refs {
				got = append(got, r.String()+" "+string(r.Strength))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: Referrers() -want +got:\n%s", tc.thread, diff)
			}
			if total != len(tc.want) {
				t.Errorf("total = %d, want %d", total, len(tc.want))
			}
		})
	}
}

func TestReferrersBounded(t *testing.T) {
	var docs []string
	for i := range maxReferrers + 5 {
		docs = append(docs, `{apiVersion: v1, kind: Pod, metadata: {name: p`+string(rune('a'+i))+`, namespace: d, uid: u`+string(rune('a'+i))+`}, spec: {volumes: [{persistentVolumeClaim: {claimName: c}}]}}`)
	}
	refs, total := Referrers(Target{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "d", Name: "c", UID: "t"}, objs(t, docs...))
	if len(refs) != maxReferrers || total != maxReferrers+5 {
		t.Errorf("got %d refs of %d, want %d of %d", len(refs), total, maxReferrers, maxReferrers+5)
	}
}

func TestPlausibleKinds(t *testing.T) {
	gvk := func(g, k string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: g, Version: "v1", Kind: k}
	}
	served := []schema.GroupVersionKind{
		gvk("", "Pod"), gvk("", "PersistentVolumeClaim"), gvk("", "ConfigMap"),
		gvk("gateway.networking.k8s.io", "GatewayClass"), gvk("gateway.networking.k8s.io", "Gateway"), gvk("gateway.networking.k8s.io", "HTTPRoute"),
		gvk("snapshot.storage.k8s.io", "VolumeSnapshot"),
	}
	got := PlausibleKinds(gvk("gateway.networking.k8s.io", "GatewayClass"), served, []schema.GroupVersionKind{gvk("", "ConfigMap")})
	want := []schema.GroupVersionKind{gvk("gateway.networking.k8s.io", "Gateway"), gvk("gateway.networking.k8s.io", "HTTPRoute"), gvk("", "ConfigMap")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GatewayClass -want +got:\n%s", diff)
	}
	got = PlausibleKinds(gvk("", "PersistentVolumeClaim"), served, nil)
	want = []schema.GroupVersionKind{gvk("", "Pod"), gvk("snapshot.storage.k8s.io", "VolumeSnapshot")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PersistentVolumeClaim -want +got:\n%s", diff)
	}
}
