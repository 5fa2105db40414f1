/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestNamespaceDeadlocks: family 6 of the scenarios, from real threads.
func TestNamespaceDeadlocks(t *testing.T) {
	terminating := typed[corev1.Namespace](t, `{metadata: {name: test, deletionTimestamp: "2026-11-28T11:00:00Z"}, status: {phase: Terminating}}`)
	live := typed[corev1.Namespace](t, `{metadata: {name: test}, status: {phase: Active}}`)
	cases := map[string]struct {
		thread  string
		doc     string
		ns      *corev1.Namespace
		present []string // kind/ns/name that exist
		want    []string
	}{
		"RabbitMQ User needs the credentials Secret that went with its namespace": {
			thread: "https://github.com/rabbitmq/messaging-topology-operator/issues/277",
			doc:    `{apiVersion: rabbitmq.com/v1beta1, kind: User, metadata: {name: my-fav-user, namespace: test, finalizers: [deletion.finalizers.users.rabbitmq.com]}, spec: {tags: [management], rabbitmqClusterReference: {name: rabbitmq, namespace: test}, importCredentialsSecret: {name: test-creds}}}`,
			ns:     terminating,
			want:   []string{"Secret test/test-creds (spec.importCredentialsSecret.name) terminating"},
		},
		"Azure Service Operator resource whose namespaced credential went first": {
			thread: "https://github.com/Azure/azure-service-operator/issues/4679",
			doc:    `{apiVersion: resources.azure.com/v1api20200601, kind: ResourceGroup, metadata: {name: rg, namespace: test, annotations: {serviceoperator.azure.com/credential-from: aso-credential}}, spec: {location: westus}}`,
			ns:     terminating,
			want:   []string{"Secret test/aso-credential (annotation serviceoperator.azure.com/credential-from) terminating"},
		},
		"external-secrets generator whose auth Secret went with the namespace": {
			thread: "https://github.com/external-secrets/external-secrets/issues/6773",
			doc:    `{apiVersion: generators.external-secrets.io/v1alpha1, kind: GitlabAccessToken, metadata: {name: tok, namespace: test}, spec: {url: "https://gitlab.example", auth: {token: {secretRef: {name: gitlab-token, key: token}}}}}`,
			ns:     terminating,
			want:   []string{"Secret test/gitlab-token (spec.auth.token.secretRef.name) terminating"},
		},
		"vault-config RandomSecret authenticates as a ServiceAccount that went with the namespace": {
			thread: "https://github.com/redhat-cop/vault-config-operator/issues/133",
			doc:    `{apiVersion: redhatcop.redhat.io/v1alpha1, kind: RandomSecret, metadata: {name: test-secret, namespace: test}, spec: {authentication: {role: kv-creator, serviceAccount: {name: sa-vault-kv-creator}}, path: kv/data/deletion-test, secretKey: password}}`,
			ns:     terminating,
			want:   []string{"ServiceAccount test/sa-vault-kv-creator (spec.authentication.serviceAccount.name) terminating"},
		},
		"Atlas project whose credentials Secret was deleted, in a live namespace: recreate it": {
			thread: "https://github.com/mongodb/mongodb-atlas-kubernetes/issues/425",
			doc:    `{apiVersion: atlas.mongodb.com/v1, kind: AtlasProject, metadata: {name: p, namespace: test}, spec: {name: p, connectionSecretRef: {name: my-atlas-key}}}`,
			ns:     live,
			want:   []string{"Secret test/my-atlas-key (spec.connectionSecretRef.name) recreate"},
		},
		"what still exists, or is not a name, is no deadlock": {
			doc:     `{apiVersion: x.io/v1, kind: Thing, metadata: {name: t, namespace: test}, spec: {credentialsSecret: {name: here, key: "password"}, secretKey: password, tlsSecretName: here-too}}`,
			ns:      terminating,
			present: []string{"Secret/test/here", "Secret/test/here-too"},
			want:    nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			exists := map[string]bool{}
			for _, p := range tc.present {
				exists[p] = true
			}
			present := func(kind, ns, name string) (bool, bool) { return exists[kind+"/"+ns+"/"+name], true }
			var got []string
			for _, d := range NamespaceDeadlocks(obj(t, tc.doc), tc.ns, present) {
				s := d.Need.String()
				if d.Terminating {
					s += " terminating"
				} else {
					s += " recreate"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: NamespaceDeadlocks() -want +got:\n%s", tc.thread, diff)
			}
		})
	}
}
