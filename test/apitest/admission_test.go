/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package apitest

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

const (
	kindNamespaced = "TeardownPolicy"
	kindCluster    = "ClusterTeardownPolicy"
)

// validTarget is a target the API accepts, for cases about other fields.
const validTarget = `
targets:
- apiVersion: v1
  kind: Service
  selector: {matchLabels: {app: shop}}
`

// withSteps returns a valid spec with the given steps (YAML list items).
func withSteps(steps string) string {
	return validTarget + "steps:\n" + steps
}

// repeat returns n YAML list items made from format, which gets the index.
func repeat(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

// TestAdmissionRefusesInvalidPolicies creates invalid policies and checks
// that the API server refuses each with a message that says what is wrong.
func TestAdmissionRefusesInvalidPolicies(t *testing.T) {
	testenv.SkipShort(t)
	c := newClient(t)
	cases := []struct {
		name string
		kind string // kindNamespaced if empty
		// objectName is metadata.name; derived from the case name if empty.
		objectName string
		spec       string
		want       string
	}{
		{
			name: "unqualified finalizer",
			spec: "finalizer: nodomain\n" + validTarget,
			want: "finalizer must be a domain-qualified key such as example.com/cleanup",
		},
		{
			name: "finalizer domain without a dot",
			spec: "finalizer: example/cleanup\n" + validTarget,
			want: "finalizer must be a domain-qualified key such as example.com/cleanup",
		},
		{
			name: "finalizer with uppercase domain",
			spec: "finalizer: Example.com/cleanup\n" + validTarget,
			want: "finalizer must be a domain-qualified key such as example.com/cleanup",
		},
		{
			name: "finalizer name over 63 characters",
			spec: "finalizer: example.com/" + strings.Repeat("a", 64) + "\n" + validTarget,
			want: "finalizer may have at most 253 characters before the slash and 63 after it",
		},
		{
			name: "finalizer owned by Kubernetes",
			spec: "finalizer: kubernetes.io/pvc-protection\n" + validTarget,
			want: "finalizer keys under kubernetes.io and k8s.io belong to Kubernetes",
		},
		{
			name: "finalizer under a k8s.io subdomain",
			spec: "finalizer: batch.k8s.io/cleanup\n" + validTarget,
			want: "finalizer keys under kubernetes.io and k8s.io belong to Kubernetes",
		},
		{
			name: "derived finalizer needs a short name",
			kind: kindCluster, objectName: strings.Repeat("a", 64),
			spec: validTarget,
			want: "a policy without spec.finalizer needs a name of at most 63 characters",
		},
		{
			name: "bad attach mode",
			spec: "attach: Sometimes\n" + validTarget,
			want: `spec.attach: Unsupported value: "Sometimes": supported values: "Automatic", "Declared"`,
		},
		{
			name: "no targets",
			spec: "attach: Automatic\n",
			want: "spec.targets: Required value",
		},
		{
			name: "empty targets",
			spec: "targets: []\n",
			want: "spec.targets: Invalid value: 0: spec.targets in body should have at least 1 items",
		},
		{
			name: "too many targets",
			spec: "targets:\n" + repeat(17, "- {apiVersion: v1, kind: Service, selector: {matchLabels: {n: \"%d\"}}}\n"),
			want: "spec.targets: Too many: 17: must have at most 16 items",
		},
		{
			name: "target without selector",
			spec: "targets:\n- {apiVersion: v1, kind: Service}\n",
			want: "spec.targets[0].selector: Required value",
		},
		{
			name: "target with a bad apiVersion",
			spec: "targets:\n- {apiVersion: /v1, kind: Service, selector: {}}\n",
			want: "spec.targets[0].apiVersion in body should match",
		},
		{
			name: "namespaceSelector on a TeardownPolicy",
			spec: validTarget + "  namespaceSelector: {matchLabels: {env: prod}}\n",
			want: "namespaceSelector is only allowed on a ClusterTeardownPolicy",
		},
		{
			name: "namespaceSelector in a wait step of a TeardownPolicy",
			spec: withSteps("- name: widgets-gone\n  wait: {resources: [{apiVersion: v1, kind: ConfigMap, selector: {}, namespaceSelector: {}}]}\n"),
			want: "namespaceSelector in a wait or delete step is only allowed on a ClusterTeardownPolicy",
		},
		{
			name: "namespaceSelector in a delete step of a TeardownPolicy",
			spec: withSteps("- name: delete-widgets\n  delete: {resources: [{apiVersion: v1, kind: ConfigMap, selector: {matchLabels: {app: w}}, namespaceSelector: {matchLabels: {team: red}}}]}\n"),
			want: "namespaceSelector in a wait or delete step is only allowed on a ClusterTeardownPolicy",
		},
		{
			name: "job namespace on a TeardownPolicy",
			spec: withSteps("- name: drain\n  job: {namespace: ops, template: {spec: {}}}\n"),
			want: "job.namespace is only allowed on a ClusterTeardownPolicy",
		},
		{
			name: "job without namespace on a ClusterTeardownPolicy",
			kind: kindCluster,
			spec: withSteps("- name: drain\n  job: {template: {spec: {}}}\n"),
			want: "a job step of a ClusterTeardownPolicy must set job.namespace",
		},
		{
			name: "step with two actions",
			spec: withSteps(`- name: both
  webhook: {url: "https://cleaner.example.com/"}
  wait: {resources: [{apiVersion: v1, kind: Pod, selector: {}}]}
`),
			want: "a step has exactly one action: split webhook, job, delete, wait and unused into separate steps",
		},
		{
			name: "step with no action",
			spec: withSteps("- name: nothing\n  onFailure: Continue\n"),
			want: "a step needs an action: set one of webhook, job, delete, wait or unused",
		},
		{
			name: "unused and wait in one step",
			spec: withSteps("- name: both\n  unused: {}\n  wait: {resources: [{apiVersion: v1, kind: Pod, selector: {}}]}\n"),
			want: "a step has exactly one action: split webhook, job, delete, wait and unused into separate steps",
		},
		{
			name: "unused step holding a Deployment",
			spec: "targets:\n- {apiVersion: v1, kind: ServiceAccount, selector: {}}\n- {apiVersion: apps/v1, kind: Deployment, selector: {}}\nsteps:\n- {name: pods-gone, unused: {}}\n",
			want: "an unused step holds only what pods use by reference: targets of a policy with an unused step must be v1 ServiceAccount, Secret or ConfigMap, or rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding or ClusterRoleBinding",
		},
		{
			name: "unused step holding a Secret of another group",
			kind: kindCluster,
			spec: "targets:\n- {apiVersion: example.com/v1, kind: Secret, selector: {}}\nsteps:\n- {name: pods-gone, unused: {}}\n",
			want: "targets of a policy with an unused step must be v1 ServiceAccount, Secret or ConfigMap",
		},
		{
			name: "unused step holding a PersistentVolumeClaim",
			spec: "targets:\n- {apiVersion: v1, kind: PersistentVolumeClaim, selector: {}}\nsteps:\n- {name: pods-gone, unused: {}}\n",
			want: "an unused step cannot hold a PersistentVolumeClaim: Kubernetes already holds one while a pod uses it, with its finalizer kubernetes.io/pvc-protection",
		},
		{
			name: "duplicate step names",
			spec: withSteps(`- name: dns
  webhook: {url: "https://a.example.com/"}
- name: dns
  webhook: {url: "https://b.example.com/"}
`),
			want: "step names must be unique within a policy",
		},
		{
			name: "step name that is not a DNS label",
			spec: withSteps("- name: Remove_DNS\n  webhook: {url: \"https://a.example.com/\"}\n"),
			want: "spec.steps[0].name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
		},
		{
			name: "too many steps",
			spec: withSteps(repeat(33, "- {name: s%d, webhook: {url: \"https://a.example.com/\"}}\n")),
			want: "spec.steps: Too many: 33: must have at most 32 items",
		},
		{
			name: "webhook with url and service",
			spec: withSteps(`- name: dns
  webhook:
    url: "https://a.example.com/"
    service: {namespace: shop, name: dns-cleaner}
`),
			want: "a webhook needs exactly one of url or service",
		},
		{
			name: "webhook with neither url nor service",
			spec: withSteps("- name: dns\n  webhook: {timeout: 5s}\n"),
			want: "a webhook needs exactly one of url or service",
		},
		{
			name: "webhook url that is not http",
			spec: withSteps("- name: dns\n  webhook: {url: \"ftp://a.example.com/cleanup\"}\n"),
			want: "url must be an absolute http:// or https:// URL",
		},
		{
			name: "webhook url that is relative",
			spec: withSteps("- name: dns\n  webhook: {url: \"/cleanup\"}\n"),
			want: "url must be an absolute http:// or https:// URL",
		},
		{
			name: "webhook timeout over 5m",
			spec: withSteps("- name: dns\n  webhook: {url: \"https://a.example.com/\", timeout: 10m}\n"),
			want: "webhook timeout must be a positive duration of at most 5m",
		},
		{
			name: "webhook service path without a slash",
			spec: withSteps("- name: dns\n  webhook: {service: {namespace: shop, name: dns, path: cleanup}}\n"),
			want: "path must start with /",
		},
		{
			name: "zero deadline",
			spec: "deadline: 0s\n" + validTarget,
			want: "deadline must be a positive duration such as 90s, 30m or 1h30m",
		},
		{
			name: "negative deadline",
			spec: "deadline: -5m\n" + validTarget,
			want: "deadline must be a positive duration such as 90s, 30m or 1h30m",
		},
		{
			name: "deadline that is not a duration",
			spec: "deadline: soon\n" + validTarget,
			want: "deadline must be a positive duration such as 90s, 30m or 1h30m",
		},
		{
			name: "deadline too large to be a duration",
			spec: "deadline: 9999999999h\n" + validTarget,
			want: "deadline must be a positive duration such as 90s, 30m or 1h30m",
		},
		{
			name: "deadline summing past what a duration holds",
			spec: "deadline: 99999h99999h99999h99999h\n" + validTarget,
			want: "deadline must be a positive duration such as 90s, 30m or 1h30m",
		},
		{
			name: "serviceAccountName on a ClusterTeardownPolicy",
			kind: kindCluster,
			spec: "serviceAccountName: cleaner\n" + validTarget,
			want: "a ClusterTeardownPolicy acts as the controller: serviceAccountName is for TeardownPolicy",
		},
		{
			name: "bad onPolicyDeletion",
			spec: "onPolicyDeletion: Explode\n" + validTarget,
			want: `spec.onPolicyDeletion: Unsupported value: "Explode": supported values: "Finish", "Release"`,
		},
		{
			name: "bad onDeadline",
			spec: "onDeadline: Explode\n" + validTarget,
			want: `spec.onDeadline: Unsupported value: "Explode": supported values: "Block", "Release"`,
		},
		{
			name: "bad onFailure",
			spec: withSteps("- name: dns\n  webhook: {url: \"https://a.example.com/\"}\n  onFailure: Ignore\n"),
			want: `spec.steps[0].onFailure: Unsupported value: "Ignore": supported values: "Retry", "Continue", "Release"`,
		},
		{
			name: "zero step timeout",
			spec: withSteps("- name: dns\n  webhook: {url: \"https://a.example.com/\"}\n  timeout: 0s\n"),
			want: "timeout must be a positive duration such as 30s, 5m or 1h",
		},
		{
			name: "bad propagationPolicy",
			spec: withSteps(`- name: ds
  delete:
    resources: [{apiVersion: apps/v1, kind: DaemonSet, selector: {matchLabels: {app: agent}}}]
    propagationPolicy: Cascade
`),
			want: `spec.steps[0].delete.propagationPolicy: Unsupported value: "Cascade": supported values: "Foreground", "Background", "Orphan"`,
		},
		{
			name: "delete with an empty selector",
			spec: withSteps(`- name: ds
  delete:
    resources: [{apiVersion: apps/v1, kind: DaemonSet, selector: {}}]
`),
			want: "every resource of a delete step needs a non-empty selector",
		},
		{
			name: "delete without resources",
			spec: withSteps("- name: ds\n  delete: {resources: []}\n"),
			want: "spec.steps[0].delete.resources in body should have at least 1 items",
		},
		{
			name: "empty wait condition",
			spec: withSteps(`- name: gone
  wait:
    resources: [{apiVersion: v1, kind: Pod, selector: {}}]
    condition: ""
`),
			want: "spec.steps[0].wait.condition in body should be at least 1 chars long",
		},
		{
			name: "wait condition over 1024 characters",
			spec: withSteps(`- name: gone
  wait:
    resources: [{apiVersion: v1, kind: Pod, selector: {}}]
    condition: "` + strings.Repeat("true && ", 128) + `true"
`),
			// The API server's wording: "may not be more than 1024" on
			// 1.36, "may not be longer than 1024" on 1.30 (make test-compat).
			want: "spec.steps[0].wait.condition: Too long: may not be ",
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.kind
			if kind == "" {
				kind = kindNamespaced
			}
			name := tc.objectName
			if name == "" {
				name = fmt.Sprintf("invalid-%d", i)
			}
			obj := newPolicy(t, kind, name, tc.spec)
			err := c.Create(t.Context(), obj)
			if err == nil {
				_ = c.Delete(t.Context(), obj)
				t.Fatalf("the API server accepted the invalid policy; want an error containing %q", tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid (422) error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say what is wrong\n got: %v\nwant: ...%s...", err, tc.want)
			}
			t.Log(err)
		})
	}
	if len(cases) < 12 {
		t.Errorf("only %d cases", len(cases))
	}
}

// newPolicy builds a policy of kind from a spec written in YAML, so that
// values the Go types cannot hold can be sent too.
func newPolicy(t *testing.T, kind, name, spec string) *unstructured.Unstructured {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatalf("bad spec YAML in the test: %v\n%s", err, spec)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": s}}
	obj.SetAPIVersion(teardownv1alpha1.GroupVersion.String())
	obj.SetKind(kind)
	obj.SetName(name)
	if kind == kindNamespaced {
		obj.SetNamespace("default")
	}
	return obj
}
