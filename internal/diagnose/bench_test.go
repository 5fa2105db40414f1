/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/diagnose/kube/kubefake"
)

// BenchmarkExplain: explain on a stuck object over the fake harness, each
// iteration a fresh run (its own Cluster, every list read once), with the
// families of issue 26 and, as the same run's baseline, without them. The
// target is a GatewayClass held by an in-use protection, in a cluster of 20
// Gateways and 20 ConfigMaps in 10 namespaces, its operator running: the
// referrers pass lists every kind of its API group.
//
//	go test -run '^$' -bench BenchmarkExplain -benchtime 200x ./internal/diagnose/
func BenchmarkExplain(b *testing.B) {
	docs := []string{
		`{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: eg, uid: gc-1, deletionTimestamp: "2026-11-28T11:00:00Z", finalizers: [gateway-exists-finalizer.gateway.networking.k8s.io],
  managedFields: [{manager: envoy-gateway, operation: Update, apiVersion: gateway.networking.k8s.io/v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {".": {}, "v:\"gateway-exists-finalizer.gateway.networking.k8s.io\"": {}}}}}]}}`,
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: envoy-gateway, namespace: envoy-gateway-system, labels: {app: envoy-gateway}},
  spec: {replicas: 1, selector: {matchLabels: {app: envoy-gateway}}, template: {metadata: {labels: {app: envoy-gateway}}, spec: {serviceAccountName: envoy-gateway, containers: [{name: envoy-gateway, image: docker.io/envoyproxy/gateway:v1.2.0, command: [envoy-gateway]}]}}},
  status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`,
	}
	for i := range 20 {
		docs = append(docs,
			fmt.Sprintf(`{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: gw-%d, namespace: ns-%d}, spec: {gatewayClassName: %s}}`, i, i%10, map[bool]string{true: "eg", false: "other"}[i == 7]),
			fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%d, namespace: ns-%d}}`, i, i%10))
	}
	objs := make([]runtime.Object, 0, len(docs))
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			b.Fatal(err)
		}
		objs = append(objs, u)
	}
	target := objs[0].(*unstructured.Unstructured)
	for _, families := range []bool{true, false} {
		b.Run(fmt.Sprintf("families=%v", families), func(b *testing.B) {
			var root string
			for b.Loop() {
				b.StopTimer()
				c, f := kubefake.New(b, objs...)
				e := NewExplainer(c, testNow)
				e.skipFamilies = !families
				t := fakeTarget(b, f.Mapper, target)
				b.StartTimer()
				rep, err := e.Explain(context.Background(), t)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				root = ""
				if len(rep.RootBlockers) > 0 {
					root = rep.RootBlockers[0].Cause
				}
				b.StartTimer()
			}
			if want := map[bool]string{true: CauseInUseBy, false: ""}[families]; root != want {
				b.Fatalf("first root blocker %q, want %q", root, want)
			}
		})
	}
}
