/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/chart"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// renderErr is helm template with args, expected to fail: it returns what
// helm said.
func renderErr(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmErr(append([]string{"template", releaseName, chart.Dir, "-n", releaseNS}, args...)...)
	if err == nil {
		t.Fatalf("helm template %s rendered (%d bytes); want it refused", strings.Join(args, " "), len(out))
	}
	return err.Error()
}

// TestSchemaRefusesMistakes: values.schema.json refuses unknown keys at
// every level and values of the wrong type or form, so helm install stops
// instead of rendering the defaults in their place. Before the schema every
// one of these rendered (exit 0).
func TestSchemaRefusesMistakes(t *testing.T) {
	testenv.SkipShort(t) // runs helm, built by TestMain outside the unit tier
	testenv.SkipShort(t)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"crds.kepp=false"}, "at '/crds': additional properties 'kepp' not allowed"},
		{[]string{"image.digst=sha256:abc"}, "at '/image': additional properties 'digst' not allowed"},
		{[]string{"replicas=3"}, "additional properties 'replicas' not allowed"},
		{[]string{"webhook.certManager.enable=true"}, "at '/webhook/certManager': additional properties 'enable' not allowed"},
		{[]string{"image.digest=sha256:abc"}, "at '/image/digest'"},
		{[]string{"image.pullPolicy=Sometimes"}, "at '/image/pullPolicy'"},
		{[]string{"inUseWebhook.failurePolicy=Deny"}, "at '/inUseWebhook/failurePolicy'"},
		{[]string{"attemptTimeout=2 minutes"}, "at '/attemptTimeout'"},
		{[]string{"diagnose.after=5"}, "at '/diagnose/after'"},
		{[]string{"replicaCount=-1"}, "at '/replicaCount'"},
		{[]string{"replicaCount=two"}, "at '/replicaCount'"},
		{[]string{"logLevel=verbose"}, "at '/logLevel'"},
		{[]string{"podDisruptionBudget.minAvailable=half"}, "at '/podDisruptionBudget/minAvailable'"},
		{[]string{"metrics.port=70000"}, "at '/metrics/port'"},
		{[]string{"webhook.timeoutSeconds=60"}, "at '/webhook/timeoutSeconds'"},
		{[]string{"crds.enabled=yes please"}, "at '/crds/enabled'"},
		{[]string{"imagePullSecrets[0].nam=regcred"}, "additional properties 'nam' not allowed"},
	} {
		t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			if got := renderErr(t, args...); !strings.Contains(got, "values don't meet the specifications of the schema") || !strings.Contains(got, tc.want) {
				t.Errorf("helm said:\n%s\nwant the schema's refusal with %q", got, tc.want)
			}
		})
	}
}

// TestSchemaAcceptsValidForms is the negative control of
// TestSchemaRefusesMistakes: the forms values.yaml documents render,
// including what --set makes of numbers.
func TestSchemaAcceptsValidForms(t *testing.T) {
	testenv.SkipShort(t) // runs helm, built by TestMain outside the unit tier
	testenv.SkipShort(t)
	for _, set := range [][]string{
		{"diagnose.after=0"},
		{"diagnose.after=1h30m", "attemptTimeout=90s", "inUseWebhook.releaseGrace=500ms"},
		{"logLevel=debug"},
		{"logLevel=3"},
		{"podDisruptionBudget.minAvailable=50%"},
		{"podDisruptionBudget.minAvailable=null", "podDisruptionBudget.maxUnavailable=1"},
		{"image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"imagePullSecrets[0].name=regcred"},
		{"resources.limits.memory=1Gi", "affinity.nodeAffinity.x=y", "tolerations[0].key=k"},
		{"webhook.certManager.enabled=true", "webhook.certManager.issuerRef.name=ca", "webhook.certManager.issuerRef.kind=ClusterIssuer", "webhook.enabled=true"},
		{"replicaCount=0"},
	} {
		var args []string
		for _, s := range set {
			args = append(args, "--set", s)
		}
		helm(t, append([]string{"template", releaseName, chart.Dir, "-n", releaseNS}, args...)...)
	}
}

// TestRefusedCombinations: values that each pass the schema but together
// break the install fail with what to set instead (templates/validate.yaml).
// Every case rendered before the guards.
func TestRefusedCombinations(t *testing.T) {
	testenv.SkipShort(t) // runs helm, built by TestMain outside the unit tier
	testenv.SkipShort(t)
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"two replicas without leader election", []string{"leaderElection.enabled=false"},
			"replicaCount=2 without leaderElection.enabled: 2 controllers would act on the same objects at once"},
		{"ServiceMonitor without metrics", []string{"serviceMonitor.enabled=true", "metrics.enabled=false"},
			"serviceMonitor.enabled with metrics.enabled=false"},
		{"PodMonitor without metrics", []string{"podMonitor.enabled=true", "metrics.enabled=false"},
			"podMonitor.enabled with metrics.enabled=false"},
		{"PrometheusRule without metrics", []string{"prometheusRule.enabled=true", "metrics.enabled=false"},
			"prometheusRule.enabled with metrics.enabled=false"},
		{"ServiceMonitor over plain http", []string{"serviceMonitor.enabled=true", "metrics.secure=false"},
			"serviceMonitor.enabled with metrics.secure=false"},
		{"both monitors", []string{"serviceMonitor.enabled=true", "podMonitor.enabled=true"},
			"Prometheus would scrape every series twice"},
		{"budget as large as the replicas", []string{"podDisruptionBudget.minAvailable=2"},
			"allows no disruption: every node drain would wait on it"},
		{"budget of 100%", []string{"replicaCount=3", "podDisruptionBudget.minAvailable=100%"},
			"allows no disruption"},
		{"maxUnavailable 0", []string{"podDisruptionBudget.minAvailable=null", "podDisruptionBudget.maxUnavailable=0"},
			"allows no disruption"},
		{"issuer without cert-manager", []string{"webhook.enabled=true", "webhook.certManager.issuerRef.name=ca"},
			"webhook.certManager.issuerRef is set but webhook.certManager.enabled is false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			if got := renderErr(t, args...); !strings.Contains(got, tc.want) {
				t.Errorf("helm said:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}

// TestAllowedCombinations is the negative control of TestRefusedCombinations:
// the nearest combinations that work render.
func TestAllowedCombinations(t *testing.T) {
	testenv.SkipShort(t) // runs helm, built by TestMain outside the unit tier
	testenv.SkipShort(t)
	for _, set := range [][]string{
		{"leaderElection.enabled=false", "replicaCount=1"},
		{"serviceMonitor.enabled=true", "prometheusRule.enabled=true"},
		{"podMonitor.enabled=true"},
		{"metrics.enabled=false"},
		{"metrics.secure=false"},
		{"replicaCount=3", "podDisruptionBudget.minAvailable=2"},
		{"podDisruptionBudget.minAvailable=null", "podDisruptionBudget.maxUnavailable=1"},
		{"replicaCount=1", "podDisruptionBudget.minAvailable=1"},
	} {
		var args []string
		for _, s := range set {
			args = append(args, "--set", s)
		}
		helm(t, append([]string{"template", releaseName, chart.Dir, "-n", releaseNS}, args...)...)
	}
}

// TestNoBudgetBlocksDrains: the PodDisruptionBudget is rendered only with
// more than one replica (before, replicaCount=1 rendered minAvailable: 1,
// which blocks every node drain), and without leader election the
// Deployment is recreated, not rolled, so two controllers never overlap.
func TestNoBudgetBlocksDrains(t *testing.T) {
	testenv.SkipShort(t) // runs helm, built by TestMain outside the unit tier
	testenv.SkipShort(t)
	for _, tc := range []struct {
		set      []string
		wantPDB  map[string]any
		strategy any
	}{
		{nil, map[string]any{"minAvailable": float64(1)}, nil},
		{[]string{"replicaCount=1"}, nil, nil},
		{[]string{"replicaCount=1", "leaderElection.enabled=false"}, nil, map[string]any{"type": "Recreate"}},
		{[]string{"replicaCount=3", "podDisruptionBudget.minAvailable=null", "podDisruptionBudget.maxUnavailable=1"}, map[string]any{"maxUnavailable": float64(1)}, nil},
	} {
		var args []string
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		objs := render(t, args...)
		pdb := find(objs, "PodDisruptionBudget", "teardown-controller")
		switch {
		case tc.wantPDB == nil && pdb != nil:
			t.Errorf("%v: a PodDisruptionBudget %v", tc.set, get(pdb, "spec"))
		case tc.wantPDB != nil:
			spec, _ := get(pdb, "spec").(map[string]any)
			for k, v := range tc.wantPDB {
				if spec[k] != v {
					t.Errorf("%v: PodDisruptionBudget spec %v, want %s: %v", tc.set, spec, k, v)
				}
			}
		}
		if got := get(find(objs, "Deployment", "teardown-controller"), "spec", "strategy"); !equalJSON(got, tc.strategy) {
			t.Errorf("%v: Deployment strategy %v, want %v", tc.set, got, tc.strategy)
		}
	}
}

// TestServiceMonitorAuthorization: the ServiceMonitor sends the token of the
// chart's teardown-metrics-reader-token Secret, not the deprecated
// bearerTokenFile, and the chart renders that Secret and its ServiceAccount
// with it.
func TestServiceMonitorAuthorization(t *testing.T) {
	testenv.SkipShort(t) // runs helm, built by TestMain outside the unit tier
	testenv.SkipShort(t)
	objs := render(t, "--set", "serviceMonitor.enabled=true")
	sm := find(objs, "ServiceMonitor", "teardown-controller")
	ep := get(sm, "spec", "endpoints", 0)
	if get(ep, "bearerTokenFile") != nil {
		t.Errorf("the ServiceMonitor uses the deprecated bearerTokenFile: %v", ep)
	}
	want := map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "teardown-metrics-reader-token", "key": "token"}}
	if got := get(ep, "authorization"); !equalJSON(got, want) {
		t.Errorf("ServiceMonitor authorization = %v, want %v", got, want)
	}
	secret := find(objs, "Secret", "teardown-metrics-reader-token")
	if get(secret, "type") != "kubernetes.io/service-account-token" || get(secret, "metadata", "annotations", "kubernetes.io/service-account.name") != "teardown-metrics-reader" {
		t.Errorf("no token Secret for the ServiceMonitor: %v", secret)
	}
	if find(objs, "ServiceAccount", "teardown-metrics-reader") == nil || find(objs, "ClusterRoleBinding", "teardown-metrics-reader-token") == nil {
		t.Errorf("no ServiceAccount teardown-metrics-reader bound to teardown-metrics-reader: %v", kinds(objs))
	}
}

// TestSchemaIsFresh: values.schema.json is what make chart makes of
// hack/tools/chartschema/values.
func TestSchemaIsFresh(t *testing.T) {
	testenv.SkipShort(t) // runs helm, built by TestMain outside the unit tier
	out := filepath.Join(t.TempDir(), "values.schema.json")
	cmd := exec.Command("go", "-C", filepath.Join(root, "hack/tools/chartschema"), "run", ".", "-out", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/tools/chartschema: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, chart.Dir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("charts/teardown/values.schema.json is stale: run make chart")
	}
}

// TestSchemaMatchesValues: every key of values.yaml is described by the
// schema, and every property the schema names is in values.yaml, so the Go
// description and values.yaml cannot drift apart (keys of Kubernetes
// objects passed through, such as resources, are not the schema's).
func TestSchemaMatchesValues(t *testing.T) {
	testenv.SkipShort(t) // runs helm, built by TestMain outside the unit tier
	data, err := os.ReadFile(filepath.Join(root, chart.Dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(filepath.Join(root, chart.Dir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	var diffs []string
	var walk func(path string, v map[string]any, s map[string]any)
	walk = func(path string, v map[string]any, s map[string]any) {
		props, ok := s["properties"].(map[string]any)
		if !ok {
			return
		}
		for k := range v {
			if _, ok := props[k]; !ok {
				diffs = append(diffs, "values.yaml has "+path+k+", the schema does not")
			}
		}
		for k, p := range props {
			sub, inValues := v[k]
			if !inValues {
				diffs = append(diffs, "the schema has "+path+k+", values.yaml does not")
				continue
			}
			if m, ok := sub.(map[string]any); ok {
				walk(path+k+".", m, p.(map[string]any))
			}
		}
	}
	walk("", values, schema)
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("values.yaml and hack/tools/chartschema/values differ:\n%s", strings.Join(slices.Compact(diffs), "\n"))
	}
	if schema["additionalProperties"] != false {
		t.Error("the schema allows unknown top-level keys")
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
