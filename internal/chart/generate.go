/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package chart makes the generated part of the Helm chart charts/teardown
// from the same sources as config/: the CRDs (config/crd), the RBAC
// (config/rbac), the admission policies (config/admission) and the
// monitoring objects (config/monitoring) become templates whose namespace,
// ServiceAccount and labels are the release's; the Grafana dashboard is
// copied as is. `make chart` writes them (hack/chart), `make verify` fails
// when the chart differs, and the tests of this package render and install
// the chart on a real control plane.
package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Dir is the chart, relative to the module root.
const Dir = "charts/teardown"

// GeneratedDirs are the chart's folders that Generate writes whole: every
// file in them is generated, and a file Generate no longer makes is removed.
var GeneratedDirs = []string{"templates/crds", "templates/rbac", "templates/admission", "templates/monitoring", "files"}

// What config/ names, and what the chart puts in its place.
const (
	configNamespace      = "teardown-system"
	configServiceAccount = "teardown-controller"
	// The admission policy's default for a TeardownPolicy without
	// spec.serviceAccountName, kept in step with --default-service-account.
	configDefaultSAExpr = "object.spec.serviceAccountName : 'default'"

	sentinelNamespace = "__RELEASE_NAMESPACE__"
	sentinelSA        = "__SERVICE_ACCOUNT__"
	sentinelDefaultSA = "__DEFAULT_SERVICE_ACCOUNT__"
	sentinelLabels    = "__LABELS__"
	sentinelKeep      = "__KEEP__"
	// A monitor endpoint's scrape settings: <prefix>.interval,
	// .scrapeTimeout (left out when empty) and .tlsConfig. It sorts after
	// every other key of the endpoint, so it is never a list item's first.
	sentinelScrape = "zzz_scrape_settings"
)

// source is one file of config/ and how it goes into the chart.
type source struct {
	from string // relative to the module root
	to   string // relative to the chart
	// cond is the values path that turns the file on, such as
	// "crds.enabled"; empty: always rendered.
	cond string
	// labels is the values path of extra labels, such as
	// "serviceMonitor.labels"; empty: none.
	labels string
	crd    bool // CustomResourceDefinitions: helm.sh/resource-policy keep with crds.keep
	raw    bool // copied as is (files/, read with .Files.Get)
}

// hand lists config/ files the chart writes by hand instead, and why.
var hand = map[string]string{
	"config/rbac/service_account.yaml": "templates/serviceaccount.yaml: its name and annotations are values",
}

// aggregated are config/rbac's ClusterRoles aggregated into the built-in
// view, edit and admin roles, rendered while rbac.aggregateClusterRoles is
// on (a cluster that grants TeardownPolicies otherwise turns it off).
var aggregated = map[string]string{
	"config/rbac/teardownpolicy_view_role.yaml": "rbac.aggregateClusterRoles",
	"config/rbac/teardownpolicy_edit_role.yaml": "rbac.aggregateClusterRoles",
}

// monitoring are config/monitoring's files and the values that turn them on.
var monitoring = []source{
	{from: "config/monitoring/servicemonitor.yaml", to: "templates/monitoring/servicemonitor.yaml", cond: "serviceMonitor.enabled", labels: "serviceMonitor.labels"},
	{from: "config/monitoring/podmonitor.yaml", to: "templates/monitoring/podmonitor.yaml", cond: "podMonitor.enabled", labels: "podMonitor.labels"},
	{from: "config/monitoring/prometheusrule.yaml", to: "templates/monitoring/prometheusrule.yaml", cond: "prometheusRule.enabled", labels: "prometheusRule.labels"},
	{from: "config/monitoring/dashboard.json", to: "files/dashboard.json", raw: true},
}

// optIn are config/ files left out of its kustomizations (applied by
// hand), which the chart renders when a value turns them on.
var optIn = []source{
	{from: "config/rbac/diagnose_role.yaml", to: "templates/rbac/diagnose_role.yaml", cond: "diagnose.readRights"},
}

// sources lists the files of config/ that make the chart, reading the
// kustomizations of config/crd, config/rbac and config/admission.
func sources(root string) ([]source, error) {
	var out []source
	for _, d := range []struct{ dir, to, cond string }{
		{"config/crd", "templates/crds", "crds.enabled"},
		{"config/rbac", "templates/rbac", ""},
		{"config/admission", "templates/admission", "admissionPolicies.enabled"},
	} {
		files, err := kustomizationResources(filepath.Join(root, d.dir))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			from := path.Join(d.dir, f)
			if _, ok := hand[from]; ok {
				continue
			}
			cond := d.cond
			if c, ok := aggregated[from]; ok {
				cond = c
			}
			out = append(out, source{from: from, to: path.Join(d.to, path.Base(f)), cond: cond, crd: d.dir == "config/crd"})
		}
	}
	for _, m := range append(slices.Clone(monitoring), optIn...) {
		if _, err := os.Stat(filepath.Join(root, m.from)); err != nil {
			return nil, fmt.Errorf("%s: %w", m.from, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func kustomizationResources(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	return k.Resources, nil
}

// Generate returns the generated files of the chart, by path relative to
// the chart, made from the module at root.
func Generate(root string) (map[string][]byte, error) {
	srcs, err := sources(root)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, s := range srcs {
		data, err := os.ReadFile(filepath.Join(root, s.from))
		if err != nil {
			return nil, err
		}
		if s.raw {
			out[s.to] = data
			continue
		}
		tpl, err := template(s, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.from, err)
		}
		out[s.to] = tpl
	}
	return out, nil
}

// Write replaces the generated folders of the chart under root with files.
func Write(root string, files map[string][]byte) error {
	chart := filepath.Join(root, Dir)
	for _, d := range GeneratedDirs {
		if err := os.RemoveAll(filepath.Join(chart, d)); err != nil {
			return err
		}
	}
	for name, data := range files {
		p := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Stale lists how the chart under root differs from files: generated files
// that are missing, different or left over.
func Stale(root string, files map[string][]byte) ([]string, error) {
	chart := filepath.Join(root, Dir)
	var stale []string
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(chart, name))
		if err != nil {
			stale = append(stale, name+": missing")
		} else if !bytes.Equal(got, want) {
			stale = append(stale, name+": differs")
		}
	}
	for _, d := range GeneratedDirs {
		err := filepath.WalkDir(filepath.Join(chart, d), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(chart, p)
			if _, ok := files[filepath.ToSlash(rel)]; !ok {
				stale = append(stale, filepath.ToSlash(rel)+": not generated")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(stale)
	return stale, nil
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// template turns one YAML file of config/ into a chart template.
func template(s source, data []byte) ([]byte, error) {
	var docs []string
	replaced := map[string]bool{}
	for _, doc := range docSeparator.Split(string(data), -1) {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return nil, err
		}
		if obj == nil {
			continue // only comments
		}
		if err := rewrite(obj, s, replaced); err != nil {
			return nil, err
		}
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		docs = append(docs, expand(string(y), s))
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no object")
	}
	// Every admission policy that names the controller must exempt the
	// chart's ServiceAccount, and the default ServiceAccount must follow
	// the value: config/ changing shape must not go unnoticed.
	if strings.HasPrefix(s.from, "config/admission/") {
		text := string(data)
		if strings.Contains(text, "'system:serviceaccount:'") && !replaced[sentinelSA] {
			return nil, fmt.Errorf("names the controller's user in a form make chart does not recognise")
		}
		if strings.Contains(text, "serviceAccountName") && !replaced[sentinelDefaultSA] {
			return nil, fmt.Errorf("defaults spec.serviceAccountName in a form make chart does not recognise (want %q)", configDefaultSAExpr)
		}
	}
	var b strings.Builder
	if s.cond != "" {
		fmt.Fprintf(&b, "{{- if .Values.%s }}\n", s.cond)
	}
	fmt.Fprintf(&b, "# Generated by make chart from %s: edit that file, not this one.\n", s.from)
	b.WriteString(strings.Join(docs, "---\n"))
	if s.cond != "" {
		b.WriteString("{{- end }}\n")
	}
	return []byte(b.String()), nil
}

// rewrite puts sentinels where the release's namespace, ServiceAccount and
// labels go.
func rewrite(obj map[string]any, s source, replaced map[string]bool) error {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		return fmt.Errorf("an object without metadata")
	}
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	if _, ok := labels["app.kubernetes.io/name"]; !ok && !s.crd {
		labels["app.kubernetes.io/name"] = "teardown-controller"
	}
	labels[sentinelLabels] = ""
	meta["labels"] = labels
	if s.crd {
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		ann[sentinelKeep] = ""
		meta["annotations"] = ann
	}
	if _, ok := obj["aggregationRule"]; ok {
		// kube-controller-manager's clusterrole-aggregation writes an
		// aggregated ClusterRole with server-side apply: racing helm
		// uninstall, it can create it again, without Helm's ownership, and
		// the next helm install would refuse it. Kept, it stays Helm's.
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		ann["helm.sh/resource-policy"] = "keep"
		meta["annotations"] = ann
	}
	if kind, _ := obj["kind"].(string); kind == "ServiceMonitor" || kind == "PodMonitor" {
		// The scrape settings come from values: every endpoint's
		// interval, scrapeTimeout and tlsConfig (config/ keeps defaults,
		// which values.yaml repeats).
		spec, _ := obj["spec"].(map[string]any)
		endpoints, _ := spec["endpoints"].([]any)
		if kind == "PodMonitor" {
			endpoints, _ = spec["podMetricsEndpoints"].([]any)
		}
		if len(endpoints) == 0 {
			return fmt.Errorf("a %s without endpoints", kind)
		}
		for _, e := range endpoints {
			ep, _ := e.(map[string]any)
			if ep == nil {
				return fmt.Errorf("a %s endpoint that is not an object", kind)
			}
			delete(ep, "interval")
			delete(ep, "scrapeTimeout")
			delete(ep, "tlsConfig")
			ep[sentinelScrape] = ""
			replaced[sentinelScrape] = true
		}
	}
	if kind, _ := obj["kind"].(string); strings.HasSuffix(kind, "Binding") {
		subjects, _ := obj["subjects"].([]any)
		for _, sub := range subjects {
			if m, ok := sub.(map[string]any); ok && m["kind"] == "ServiceAccount" && m["name"] == configServiceAccount {
				m["name"] = sentinelSA
			}
		}
	}
	walkStrings(obj, func(v string) string {
		if strings.Contains(v, "'"+configServiceAccount+"'") && strings.Contains(v, "'system:serviceaccount:'") {
			v = strings.ReplaceAll(v, "'"+configServiceAccount+"'", "'"+sentinelSA+"'")
			replaced[sentinelSA] = true
		}
		if strings.Contains(v, configDefaultSAExpr) {
			v = strings.ReplaceAll(v, configDefaultSAExpr, strings.Replace(configDefaultSAExpr, "'default'", "'"+sentinelDefaultSA+"'", 1))
			replaced[sentinelDefaultSA] = true
		}
		return strings.ReplaceAll(v, configNamespace, sentinelNamespace)
	})
	return nil
}

func walkStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case map[string]any:
		for k, e := range t {
			t[k] = walkStrings(e, f)
		}
	case []any:
		for i, e := range t {
			t[i] = walkStrings(e, f)
		}
	}
	return v
}

var (
	labelsLine = regexp.MustCompile(`(?m)^( *)` + sentinelLabels + `: ""$`)
	keepLine   = regexp.MustCompile(`(?m)^( *)` + sentinelKeep + `: ""$`)
	scrapeLine = regexp.MustCompile(`(?m)^( *)` + sentinelScrape + `: ""$`)
	// Text of config/ that looks like a template action (Prometheus alert
	// templates such as {{ $labels.finalizer }}) is printed as is.
	escape = strings.NewReplacer("{{", "{{`{{`}}", "}}", "{{`}}`}}")
)

// expand turns the sentinels of a marshalled object into template actions.
func expand(y string, s source) string {
	y = escape.Replace(y)
	y = labelsLine.ReplaceAllStringFunc(y, func(line string) string {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		pad := strings.Repeat(" ", indent)
		out := fmt.Sprintf(`%s{{- include "teardown.labels" $ | nindent %d }}`, pad, indent)
		if s.labels != "" {
			out += fmt.Sprintf("\n%s{{- with $.Values.%s }}\n%s{{- toYaml . | nindent %d }}\n%s{{- end }}", pad, s.labels, pad, indent, pad)
		}
		return out
	})
	y = scrapeLine.ReplaceAllStringFunc(y, func(line string) string {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		pad := line[:indent]
		v := "$.Values." + strings.TrimSuffix(s.cond, ".enabled")
		return pad + "interval: {{ " + v + ".interval }}\n" +
			pad + "{{- with " + v + ".scrapeTimeout }}\n" +
			pad + "scrapeTimeout: {{ . }}\n" +
			pad + "{{- end }}\n" +
			pad + "{{- with " + v + ".tlsConfig }}\n" +
			pad + "tlsConfig:\n" +
			pad + fmt.Sprintf("  {{- toYaml . | nindent %d }}\n", indent+2) +
			pad + "{{- end }}"
	})
	y = keepLine.ReplaceAllStringFunc(y, func(line string) string {
		pad := line[:len(line)-len(strings.TrimLeft(line, " "))]
		return pad + "{{- if $.Values.crds.keep }}\n" +
			pad + "helm.sh/resource-policy: keep\n" +
			pad + "argocd.argoproj.io/sync-options: Delete=false\n" +
			pad + "{{- end }}"
	})
	return strings.NewReplacer(
		sentinelNamespace, "{{ $.Release.Namespace }}",
		sentinelSA, "{{ $.Values.serviceAccount.name }}",
		sentinelDefaultSA, "{{ $.Values.defaultServiceAccount }}",
	).Replace(y)
}

// Sorted returns the names of files, sorted.
func Sorted(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
