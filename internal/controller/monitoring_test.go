/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/controller/teardownpolicy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/waits"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// policyGauge reads one per-policy gauge of a ClusterTeardownPolicy from the
// registry the manager serves.
func policyGauge(t *testing.T, metric, name string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == "ClusterTeardownPolicy" && labels["name"] == name && labels["policy_namespace"] == "" {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func gaugeIs(t *testing.T, metric, name string, want float64) func(context.Context) (bool, error) {
	return func(context.Context) (bool, error) {
		v, ok := policyGauge(t, metric, name)
		return ok && v == want, nil
	}
}

// TestPolicyGauges: teardown_policy_{ready,guarded,terminating,blocked}
// follow a policy's status, and its series go with it.
func TestPolicyGauges(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	var done atomic.Bool
	srv := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		if done.Load() {
			answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
			return
		}
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookInProgress, RetryAfterSeconds: 1})
	})
	const name = "gauges"
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "gauges")}},
			Steps:   []teardownv1alpha1.Step{srv.webhookStep("notify")},
		},
	}
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	mustBeReady(t, pol)
	testenv.Eventually(t, 10*time.Second, "teardown_policy_ready 1", gaugeIs(t, "teardown_policy_ready", name, 1))
	testenv.Eventually(t, 10*time.Second, "teardown_policy_guarded 0", gaugeIs(t, "teardown_policy_guarded", name, 0))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns, Labels: map[string]string{"app": "gauges"}}}
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "teardown_policy_guarded 1", gaugeIs(t, "teardown_policy_guarded", name, 1))
	del(t, cm)
	testenv.Eventually(t, 20*time.Second, "teardown_policy_terminating 1", gaugeIs(t, "teardown_policy_terminating", name, 1))
	testenv.Eventually(t, 20*time.Second, "teardown_policy_blocked 1", gaugeIs(t, "teardown_policy_blocked", name, 1))
	done.Store(true)
	testenv.Eventually(t, 20*time.Second, "the object gone", testenv.Gone(k8s, cm))
	testenv.Eventually(t, 20*time.Second, "teardown_policy_guarded 0 again", gaugeIs(t, "teardown_policy_guarded", name, 0))
	testenv.Eventually(t, 20*time.Second, "teardown_policy_terminating 0", gaugeIs(t, "teardown_policy_terminating", name, 0))
	testenv.Eventually(t, 20*time.Second, "teardown_policy_blocked 0", gaugeIs(t, "teardown_policy_blocked", name, 0))

	del(t, pol)
	testenv.Eventually(t, 20*time.Second, "the policy gone", testenv.Gone(k8s, pol))
	testenv.Eventually(t, 20*time.Second, "the policy's series deleted", func(context.Context) (bool, error) {
		for _, m := range []string{"teardown_policy_ready", "teardown_policy_guarded", "teardown_policy_terminating", "teardown_policy_blocked"} {
			if _, ok := policyGauge(t, m, name); ok {
				return false, nil
			}
		}
		return true, nil
	})
}

// registered says whether the controller's registry (controller-runtime's
// metrics.Registry, which the running manager serves and which
// pkg/finalizer's and the policy gauges' collectors join at init) already
// has a metric of that name: registering another one by the same name
// fails exactly then, whether or not it has series yet.
func registered(name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe"})
	if err := ctrlmetrics.Registry.Register(probe); err != nil {
		return true
	}
	ctrlmetrics.Registry.Unregister(probe)
	return false
}

// metricSelector is a metric name followed by its label matchers: every
// expression of config/monitoring selects job="teardown-controller".
var metricSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)

// monitoringExpressions are the PromQL expressions of the shipped
// PrometheusRule and dashboard, by where they are.
func monitoringExpressions(t *testing.T) map[string]string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{}
	data, err := os.ReadFile(filepath.Join(root, "config", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml is %s %s", rule.APIVersion, rule.Kind)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	data, err = os.ReadFile(filepath.Join(root, "config", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatal(err)
	}
	for _, p := range dashboard.Panels {
		for i, target := range p.Targets {
			exprs["panel "+p.Title+" #"+string(rune('A'+i))] = target.Expr
		}
	}
	return exprs
}

// TestMonitoringUsesRegisteredMetrics: every metric the shipped alerts and
// dashboard query is one the controller registers (or Prometheus's own up),
// so a renamed metric cannot silently blind them; and each expression is
// at least balanced.
func TestMonitoringUsesRegisteredMetrics(t *testing.T) {
	if registered("teardown_no_such_metric") {
		t.Fatal("the registry check accepts any name")
	}
	exprs := monitoringExpressions(t)
	for _, want := range []string{"alert TeardownCleanupStuck", "alert TeardownUnguardedDeletions", "alert TeardownPolicyNotReady", "alert TeardownControllerDown"} {
		if _, ok := exprs[want]; !ok {
			t.Errorf("prometheusrule.yaml lacks %s", want)
		}
	}
	used := map[string]bool{}
	for where, expr := range exprs {
		if expr == "" {
			t.Errorf("%s: empty expression", where)
			continue
		}
		for _, pair := range []string{"()", "{}", "[]"} {
			if strings.Count(expr, pair[:1]) != strings.Count(expr, pair[1:]) {
				t.Errorf("%s: unbalanced %s in %s", where, pair, expr)
			}
		}
		matches := metricSelector.FindAllStringSubmatch(expr, -1)
		if len(matches) == 0 {
			t.Errorf("%s: no metric selector in %s", where, expr)
		}
		for _, m := range matches {
			name := m[1]
			if !strings.Contains(expr, name+`{job="teardown-controller"`) {
				t.Errorf("%s: %s does not select job=\"teardown-controller\"", where, name)
			}
			used[name] = true
		}
	}
	for name := range used {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if trimmed, ok := strings.CutSuffix(name, suffix); ok && registered(trimmed) {
				base = trimmed
			}
		}
		if base == "up" {
			continue // Prometheus's own, per target
		}
		if !registered(base) {
			t.Errorf("config/monitoring uses %s, which the controller does not register", name)
		}
	}
	for _, want := range []string{"teardown_policy_ready", "teardown_policy_guarded", "teardown_policy_terminating", "teardown_policy_blocked",
		"teardown_finalizer_cleanup_duration_seconds_bucket", "teardown_finalizer_cleanup_oldest_age_seconds", "teardown_finalizer_handler_attempts_total",
		"teardown_finalizer_releases_total", "teardown_finalizer_unguarded_deletions_total", "teardown_finalizer_patch_conflicts_total", "workqueue_depth"} {
		if !used[want] {
			t.Errorf("config/monitoring does not show %s", want)
		}
	}
}

// targetLabels are the labels the Prometheus Operator gives every series a
// ServiceMonitor or PodMonitor scrapes (its target's), before the monitor's
// own relabelings and targetLabels.
var targetLabels = []string{"job", "instance", "namespace", "service", "pod", "container", "endpoint"}

// variableLabels are the label names of every metric the controller
// registers, by metric, read from the collectors' descriptions (a vector
// with no series yet still describes its labels).
func variableLabels(t *testing.T) map[string][]string {
	t.Helper()
	var collectors []prometheus.Collector
	collectors = append(collectors, finalizer.Collectors()...)
	collectors = append(collectors, teardownpolicy.Collectors()...)
	collectors = append(collectors, diagnosis.Collectors()...)
	collectors = append(collectors, waits.Collectors()...)
	descRE := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	labels := map[string][]string{}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the labels of %s", d)
			}
			var names []string
			for _, l := range strings.Split(m[2], ",") {
				if l = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(l), "c("), ")"); l != "" {
					names = append(names, l)
				}
			}
			labels[m[1]] = names
		}
	}
	// The metrics of controller-runtime and client-go (workqueue_*,
	// controller_runtime_*) as the running manager serves them.
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if _, ok := labels[f.GetName()]; ok || len(f.GetMetric()) == 0 {
			continue
		}
		var names []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			names = append(names, l.GetName())
		}
		labels[f.GetName()] = names
	}
	return labels
}

// baseMetric is name without a histogram's or summary's series suffix,
// when the registry knows it so.
func baseMetric(metrics map[string][]string, name string) (string, bool) {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if trimmed, ok := strings.CutSuffix(name, suffix); ok && metrics[trimmed] != nil {
			return trimmed, suffix == "_bucket"
		}
	}
	return name, false
}

// TestMonitorsKeepMetricLabels: no metric label of the controller's is one
// the shipped ServiceMonitor or PodMonitor sets on the target (without
// honorLabels, Prometheus would rename the metric's to exported_<name>, and
// alerts and dashboards would read the target's value instead: the per-policy
// gauges' namespace once became the controller's), and every label the
// alerts and dashboard group by or print is one their metrics have.
func TestMonitorsKeepMetricLabels(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	metrics := variableLabels(t)
	if got := metrics["teardown_policy_ready"]; len(got) == 0 {
		t.Fatalf("teardown_policy_ready has no labels read: %v", metrics)
	}
	for _, file := range []string{"servicemonitor.yaml", "podmonitor.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "config", "monitoring", file))
		if err != nil {
			t.Fatal(err)
		}
		var mon struct {
			Spec struct {
				TargetLabels    []string `json:"targetLabels"`
				PodTargetLabels []string `json:"podTargetLabels"`
				Endpoints       []struct {
					HonorLabels bool `json:"honorLabels"`
					Relabelings []struct {
						TargetLabel string `json:"targetLabel"`
					} `json:"relabelings"`
				} `json:"endpoints"`
				PodMetricsEndpoints []struct {
					HonorLabels bool `json:"honorLabels"`
					Relabelings []struct {
						TargetLabel string `json:"targetLabel"`
					} `json:"relabelings"`
				} `json:"podMetricsEndpoints"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &mon); err != nil {
			t.Fatal(err)
		}
		endpoints := append(mon.Spec.Endpoints, mon.Spec.PodMetricsEndpoints...)
		if len(endpoints) == 0 {
			t.Fatalf("%s has no endpoints", file)
		}
		for _, ep := range endpoints {
			if ep.HonorLabels {
				continue
			}
			set := append(append(append([]string{}, targetLabels...), mon.Spec.TargetLabels...), mon.Spec.PodTargetLabels...)
			for _, r := range ep.Relabelings {
				set = append(set, r.TargetLabel)
			}
			for metric, names := range metrics {
				for _, n := range names {
					if slices.Contains(set, n) {
						t.Errorf("%s sets the target label %q, which %s carries: Prometheus would rename it exported_%s", file, n, metric, n)
					}
				}
			}
		}
	}

	// The labels the expressions group by, and the ones alerts and legends
	// print, are labels of the metrics they read (or a target's).
	byRE := regexp.MustCompile(`by \(([^)]*)\)`)
	for where, expr := range monitoringExpressions(t) {
		var have []string
		known := true
		for _, m := range metricSelector.FindAllStringSubmatch(expr, -1) {
			name, bucket := baseMetric(metrics, m[1])
			if _, ok := metrics[name]; !ok {
				known = false // controller-runtime's, with no series yet
			}
			if bucket {
				have = append(have, "le")
			}
			have = append(have, metrics[name]...)
		}
		have = append(have, targetLabels...)
		if !known {
			t.Logf("%s: not all its metrics' labels are known here; not checked", where)
			continue
		}
		for _, m := range byRE.FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); !slices.Contains(have, l) {
					t.Errorf("%s groups by %q, which its metrics do not have (%v)", where, l, have)
				}
			}
		}
	}
	for _, printed := range monitoringLabelsPrinted(t, root) {
		name, _ := baseMetric(metrics, printed.metric)
		if _, ok := metrics[name]; !ok {
			continue // controller-runtime's, with no series yet
		}
		if !slices.Contains(metrics[name], printed.label) && !slices.Contains(targetLabels, printed.label) {
			t.Errorf("%s prints %q, which %s does not have (%v)", printed.where, printed.label, name, metrics[name])
		}
	}
}

type printedLabel struct{ where, metric, label string }

// monitoringLabelsPrinted are the labels the alerts' summaries
// ({{ $labels.x }}) and the dashboard's legends ({{x}}) show, with the metric
// of their expression (the first one it reads).
func monitoringLabelsPrinted(t *testing.T, root string) []printedLabel {
	t.Helper()
	var out []printedLabel
	first := func(expr string) string {
		if m := metricSelector.FindStringSubmatch(expr); m != nil {
			return m[1]
		}
		return ""
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Expr        string            `json:"expr"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	alertRE := regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			for _, text := range r.Annotations {
				for _, m := range alertRE.FindAllStringSubmatch(text, -1) {
					out = append(out, printedLabel{"alert " + r.Alert, first(r.Expr), m[1]})
				}
			}
		}
	}
	data, err = os.ReadFile(filepath.Join(root, "config", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatal(err)
	}
	legendRE := regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			for _, m := range legendRE.FindAllStringSubmatch(target.LegendFormat, -1) {
				out = append(out, printedLabel{"panel " + p.Title, first(target.Expr), m[1]})
			}
		}
	}
	return out
}
