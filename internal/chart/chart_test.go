/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/chart"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	root     string
	helmPath string
)

// ensureHelm builds bin/helm when it is missing, as make helm does.
// TEARDOWN_HELM names another helm instead (relative to the module root):
// make test-compat runs these tests with helm 4 that way (bin/helm4/helm).
func ensureHelm() error {
	if p := os.Getenv("TEARDOWN_HELM"); p != "" {
		helmPath = p
		if !filepath.IsAbs(p) {
			helmPath = filepath.Join(root, p)
		}
		if _, err := os.Stat(helmPath); err != nil {
			return fmt.Errorf("TEARDOWN_HELM: %w", err)
		}
		return nil
	}
	helmPath = filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helmPath); err == nil {
		return nil
	}
	cmd := exec.Command(filepath.Join(root, "hack", "helm.sh"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building bin/helm (hack/helm.sh): %w", err)
	}
	return nil
}

// helm runs bin/helm and returns its standard output.
func helm(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := helmErr(args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func helmErr(args ...string) ([]byte, error) {
	cmd := exec.Command(helmPath, args...)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%w\n%s%s", err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

const (
	releaseName = "teardown"
	releaseNS   = "teardown-system"
	nonDefault  = "internal/chart/testdata/nondefault.yaml"
)

// render is helm template of the chart in releaseNS with more args.
func render(t testing.TB, args ...string) []map[string]any {
	t.Helper()
	return parseDocs(t, helm(t, append([]string{"template", releaseName, chart.Dir, "-n", releaseNS}, args...)...))
}

var docSplit = regexp.MustCompile(`(?m)^---[ \t]*$`)

func parseDocs(t testing.TB, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range docSplit.Split(string(data), -1) {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, d)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

// find returns the rendered object of kind and name, nil if none.
func find(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range objs {
		if o["kind"] == kind && get(o, "metadata", "name") == name {
			return o
		}
	}
	return nil
}

func kinds(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s/%s", o["kind"], get(o, "metadata", "name")))
	}
	return out
}

// get walks maps by key and lists by index.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func readConfig(t testing.TB, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	return parseDocs(t, data)
}

// TestGeneratedFilesAreFresh: the chart's CRDs, RBAC, admission policies,
// monitoring objects and dashboard are what make chart makes of config/.
func TestGeneratedFilesAreFresh(t *testing.T) {
	files, err := chart.Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := chart.Stale(root, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("charts/teardown is stale (run make chart):\n%s", strings.Join(stale, "\n"))
	}
}

// TestLintAndTemplateDefaults renders the chart with its default values and
// checks what the values promise.
func TestLintAndTemplateDefaults(t *testing.T) {
	testenv.SkipShort(t)
	helm(t, "lint", "--strict", chart.Dir)
	objs := render(t)

	d := find(objs, "Deployment", "teardown-controller")
	if d == nil {
		t.Fatalf("no Deployment teardown-controller in %v", kinds(objs))
	}
	if got := get(d, "spec", "replicas"); fmt.Sprint(got) != "2" {
		t.Errorf("replicas = %v, want 2", got)
	}
	// The install check is helm test's only, checking once.
	if p := find(objs, "Pod", "teardown-check"); p == nil || get(p, "metadata", "annotations", "helm.sh/hook") != "test" ||
		strings.Contains(fmt.Sprint(get(p, "spec", "containers", 0, "args")), "--wait") {
		t.Errorf("the check Pod is not a helm test checking once: %v", p)
	}
	if find(objs, "ClusterRole", "teardown-controller-diagnose") != nil {
		t.Error("the diagnosis's read rights are granted by default; they are opt-in (diagnose.readRights)")
	}
	pod := get(d, "spec", "template", "spec")
	if got := get(pod, "serviceAccountName"); got != "teardown-controller" {
		t.Errorf("serviceAccountName = %v", got)
	}
	wantPodSC := map[string]any{"runAsNonRoot": true, "runAsUser": float64(65532), "runAsGroup": float64(65532), "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	if got := get(pod, "securityContext"); !reflect.DeepEqual(got, wantPodSC) {
		t.Errorf("pod securityContext = %v, want %v", got, wantPodSC)
	}
	c := get(pod, "containers", 0)
	wantSC := map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": map[string]any{"drop": []any{"ALL"}}}
	if got := get(c, "securityContext"); !reflect.DeepEqual(got, wantSC) {
		t.Errorf("container securityContext = %v, want %v", got, wantSC)
	}
	if got := get(c, "image"); got != "ghcr.io/teardown-dev/teardown-controller:v0.1.0" {
		t.Errorf("image = %v, want the appVersion tag", got)
	}
	var gomemlimit any
	for _, e := range get(c, "env").([]any) {
		if get(e, "name") == "GOMEMLIMIT" {
			gomemlimit = get(e, "valueFrom", "resourceFieldRef", "resource")
		}
	}
	if gomemlimit != "limits.memory" {
		t.Errorf("GOMEMLIMIT from %v, want the downward API's limits.memory", gomemlimit)
	}
	if got := get(c, "resources", "limits", "memory"); got != "512Mi" {
		t.Errorf("memory limit = %v", got)
	}
	args := fmt.Sprint(get(c, "args"))
	for _, want := range []string{"--leader-elect", "--metrics-bind-address=:8443", "--metrics-secure=true", "--default-service-account=default", "--cluster-resource-namespace=" + releaseNS} {
		if !strings.Contains(args, want) {
			t.Errorf("args %s lack %s", args, want)
		}
	}
	if strings.Contains(args, "attach-webhook") {
		t.Errorf("the attach webhook is on by default: %s", args)
	}
	if find(objs, "PodDisruptionBudget", "teardown-controller") == nil {
		t.Error("no PodDisruptionBudget by default")
	}
	for _, crd := range []string{"teardownpolicies.teardown.dev", "clusterteardownpolicies.teardown.dev"} {
		o := find(objs, "CustomResourceDefinition", crd)
		if o == nil || get(o, "metadata", "annotations", "helm.sh/resource-policy") != "keep" {
			t.Errorf("CRD %s missing or not kept on uninstall: %v", crd, get(o, "metadata", "annotations"))
		}
	}
	for _, absent := range []string{"MutatingWebhookConfiguration", "ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"} {
		for _, o := range objs {
			if o["kind"] == absent {
				t.Errorf("%s rendered by default", absent)
			}
		}
	}

	// The admission policies exempt exactly the chart's ServiceAccount.
	for _, name := range []string{"teardown-protect-finalizers", "teardown-protect-records"} {
		vap := find(objs, "ValidatingAdmissionPolicy", name)
		want := "'system:serviceaccount:' + '" + releaseNS + "' + ':' + 'teardown-controller'"
		if expr := strings.Join(strings.Fields(fmt.Sprint(get(vap, "spec", "matchConditions", 0, "expression"))), " "); !strings.Contains(expr, want) {
			t.Errorf("%s exempts %q, want %q", name, expr, want)
		}
	}
	// The controller's ClusterRole is config/rbac/role.yaml's.
	want := readConfig(t, "config/rbac/role.yaml")[0]
	if got := find(objs, "ClusterRole", "teardown-controller"); !reflect.DeepEqual(get(got, "rules"), get(want, "rules")) {
		t.Errorf("ClusterRole teardown-controller rules differ from config/rbac/role.yaml:\n%v\n%v", get(got, "rules"), get(want, "rules"))
	}

	// The uninstall hook: a pre-delete Job running `teardown-controller
	// uninstall`, with its own ServiceAccount and RBAC, all hooks.
	job := find(objs, "Job", "teardown-uninstall")
	if job == nil {
		t.Fatal("no uninstall hook Job")
	}
	for _, kn := range [][2]string{{"Job", "teardown-uninstall"}, {"ServiceAccount", "teardown-uninstall"}, {"ClusterRole", "teardown-uninstall"}, {"ClusterRoleBinding", "teardown-uninstall"}} {
		o := find(objs, kn[0], kn[1])
		if get(o, "metadata", "annotations", "helm.sh/hook") != "pre-delete" || get(o, "metadata", "annotations", "helm.sh/hook-delete-policy") == nil {
			t.Errorf("%s/%s is not a pre-delete hook with a delete policy: %v", kn[0], kn[1], get(o, "metadata", "annotations"))
		}
	}
	jc := get(job, "spec", "template", "spec", "containers", 0)
	if got := fmt.Sprint(get(jc, "command"), get(jc, "args")); got != "[/teardown-controller] [uninstall --timeout=4m]" {
		t.Errorf("hook command = %s", got)
	}
	if get(jc, "image") != get(c, "image") {
		t.Errorf("hook image %v, controller image %v", get(jc, "image"), get(c, "image"))
	}
}

// TestLintAndTemplateNonDefaults renders testdata/nondefault.yaml: the
// webhook with the chart's own certificate, monitors, rule, dashboard, no
// PodDisruptionBudget, the image by digest.
func TestLintAndTemplateNonDefaults(t *testing.T) {
	testenv.SkipShort(t)
	helm(t, "lint", "--strict", chart.Dir, "-f", nonDefault)
	objs := render(t, "-f", nonDefault)
	d := find(objs, "Deployment", "teardown-controller")
	c := get(d, "spec", "template", "spec", "containers", 0)
	if got := get(c, "image"); got != "registry.example.com/teardown/teardown-controller@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
		t.Errorf("image = %v, want by digest", got)
	}
	args := fmt.Sprint(get(c, "args"))
	for _, want := range []string{"--attach-webhook-configuration=teardown-attach-finalizers", "--webhook-cert-dir=/etc/teardown/webhook-certs",
		"--default-service-account=teardown", "--webhook-allowed-cidrs=127.0.0.0/8,::1/128", "--webhook-allow-http", "--target-workers=8", "--zap-devel",
		"--diagnose-after=2m", "--diagnose-kinds=namespaces,persistentvolumeclaims"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %s lack %s", args, want)
		}
	}
	if find(objs, "PodDisruptionBudget", "teardown-controller") != nil {
		t.Error("PodDisruptionBudget rendered although disabled")
	}
	// check.postInstall: the install check runs after install and upgrade
	// too, waiting up to check.timeout. Not in nondefault.yaml, which
	// TestInstall installs where no pod runs.
	checked := render(t, "-f", nonDefault, "--set", "check.postInstall=true", "--set", "check.timeout=90s")
	if p := find(checked, "Pod", "teardown-check"); p == nil ||
		get(p, "metadata", "annotations", "helm.sh/hook") != "test,post-install,post-upgrade" ||
		!strings.Contains(fmt.Sprint(get(p, "spec", "containers", 0, "args")), "--wait=90s") {
		t.Errorf("the check Pod is not a test, post-install and post-upgrade hook waiting 90s: %v", p)
	}
	// diagnose.readRights: config/rbac/diagnose_role.yaml, aggregated.
	if r := find(objs, "ClusterRole", "teardown-controller-diagnose"); r == nil ||
		!reflect.DeepEqual(get(r, "rules"), get(readConfig(t, "config/rbac/diagnose_role.yaml")[0], "rules")) {
		t.Errorf("ClusterRole teardown-controller-diagnose missing or not config/rbac/diagnose_role.yaml's: %v", r)
	}

	// Both webhooks of config/webhook, with the chart's CA.
	mwc := find(objs, "MutatingWebhookConfiguration", "teardown-attach-finalizers")
	cfg := find(readConfig(t, "config/webhook/mutatingwebhookconfiguration.yaml"), "MutatingWebhookConfiguration", "teardown-attach-finalizers")
	if mwc == nil || cfg == nil {
		t.Fatalf("no MutatingWebhookConfiguration teardown-attach-finalizers: %v", kinds(objs))
	}
	secret := find(objs, "Secret", "teardown-controller-webhook-tls")
	caPEM, _ := base64.StdEncoding.DecodeString(fmt.Sprint(get(secret, "data", "ca.crt")))
	crtPEM, _ := base64.StdEncoding.DecodeString(fmt.Sprint(get(secret, "data", "tls.crt")))
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("the webhook Secret's ca.crt is no certificate")
	}
	block, _ := pem.Decode(crtPEM)
	if block == nil {
		t.Fatal("the webhook Secret's tls.crt is no PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "teardown-controller-webhook." + releaseNS + ".svc"}); err != nil {
		t.Errorf("the serving certificate does not verify for the webhook Service: %v", err)
	}
	cfgHooks, _ := get(cfg, "webhooks").([]any)
	hooks, _ := get(mwc, "webhooks").([]any)
	if len(hooks) != len(cfgHooks) || len(hooks) != 2 {
		t.Fatalf("%d webhooks, config/webhook has %d", len(hooks), len(cfgHooks))
	}
	for i, h := range hooks {
		ch := cfgHooks[i]
		if get(h, "clientConfig", "caBundle") != get(secret, "data", "ca.crt") {
			t.Errorf("webhook %v: caBundle is not the Secret's CA", get(h, "name"))
		}
		for _, f := range [][]any{{"name"}, {"clientConfig", "service"}, {"namespaceSelector"}, {"failurePolicy"}, {"sideEffects"},
			{"admissionReviewVersions"}, {"timeoutSeconds"}, {"reinvocationPolicy"}} {
			if !reflect.DeepEqual(get(h, f...), get(ch, f...)) {
				t.Errorf("webhook %d %v = %v, config/webhook has %v", i, f, get(h, f...), get(ch, f...))
			}
		}
	}

	// Monitoring: the objects of config/monitoring with the release's
	// namespace and the values' labels; the dashboard for Grafana's sidecar.
	// One monitor at a time (templates/validate.yaml): the PodMonitor from a
	// rendering of its own.
	podMonitorObjs := render(t, "-f", nonDefault, "--set", "serviceMonitor.enabled=false", "--set", "podMonitor.enabled=true")
	for _, m := range []struct {
		kind, file string
		objs       []map[string]any
	}{{"ServiceMonitor", "servicemonitor.yaml", objs}, {"PodMonitor", "podmonitor.yaml", podMonitorObjs}, {"PrometheusRule", "prometheusrule.yaml", objs}} {
		got := find(m.objs, m.kind, "teardown-controller")
		want := readConfig(t, "config/monitoring/"+m.file)[0]
		if got == nil {
			t.Errorf("no %s", m.kind)
			continue
		}
		if !reflect.DeepEqual(got["spec"], want["spec"]) {
			t.Errorf("%s spec differs from config/monitoring/%s", m.kind, m.file)
		}
	}
	if got := get(find(objs, "ServiceMonitor", "teardown-controller"), "metadata", "labels", "release"); got != "prometheus" {
		t.Errorf("ServiceMonitor label release = %v", got)
	}
	dash := find(objs, "ConfigMap", "teardown-dashboard")
	want, err := os.ReadFile(filepath.Join(root, "config/monitoring/dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if get(dash, "metadata", "labels", "grafana_dashboard") != "1" || strings.TrimSpace(fmt.Sprint(get(dash, "data", "teardown.json"))) != strings.TrimSpace(string(want)) {
		t.Errorf("the dashboard ConfigMap is not config/monitoring/dashboard.json labelled grafana_dashboard: \"1\"")
	}
	// The admission policy's default ServiceAccount follows the value.
	vap := find(objs, "ValidatingAdmissionPolicy", "teardown-policy-service-account")
	if expr := fmt.Sprint(get(vap, "spec", "variables", 0, "expression")); !strings.Contains(expr, ": 'teardown'") {
		t.Errorf("teardown-policy-service-account defaults to %q, want 'teardown'", expr)
	}
	if got := get(find(objs, "Job", "teardown-uninstall"), "spec", "template", "spec", "containers", 0, "args"); !slices.Equal(toStrings(got), []string{"uninstall", "--timeout=90s"}) {
		t.Errorf("hook args = %v", got)
	}
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

func TestMain(m *testing.M) {
	var err error
	if root, err = testenv.ModuleRoot(); err != nil {
		panic(err)
	}
	// Helm is built for the tests that run it; the unit tier runs none.
	if testenv.Short() {
		os.Exit(m.Run())
	}
	if err := ensureHelm(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

// eventually polls cond every 100ms for up to timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	testenv.Eventually(t, timeout, what, cond)
}
