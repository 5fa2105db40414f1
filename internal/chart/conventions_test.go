/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"reflect"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestImageRegistryMirror: image.registry replaces the registry of
// image.repository (a host: with a dot, a port or localhost), or prefixes
// a repository that names none; by tag or by digest.
func TestImageRegistryMirror(t *testing.T) {
	testenv.SkipShort(t)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "ghcr.io/teardown-dev/teardown-controller:"},
		{"mirror host", []string{"--set", "image.registry=mirror.example.com"}, "mirror.example.com/teardown-dev/teardown-controller:"},
		{"mirror host and path", []string{"--set", "image.registry=mirror.example.com:5000/ghcr/"}, "mirror.example.com:5000/ghcr/teardown-dev/teardown-controller:"},
		{"repository without a host", []string{"--set", "image.repository=teardown-dev/teardown-controller", "--set", "image.registry=localhost:5000"},
			"localhost:5000/teardown-dev/teardown-controller:"},
		{"by digest", []string{"--set", "image.registry=mirror.example.com", "--set", "image.digest=" + digest},
			"mirror.example.com/teardown-dev/teardown-controller@" + digest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dep := find(render(t, tc.args...), "Deployment", "teardown-controller")
			if dep == nil {
				t.Fatal("no Deployment teardown-controller")
			}
			image, _ := get(dep, "spec", "template", "spec", "containers", 0, "image").(string)
			if len(image) < len(tc.want) || image[:len(tc.want)] != tc.want {
				t.Errorf("image = %q, want %q…", image, tc.want)
			}
		})
	}
}

// TestNetworkPolicyOptIn: none by default; with networkPolicy.enabled,
// ingress only on the probe, metrics and webhook ports, the metrics port
// from networkPolicy.metricsFrom, and egress left open.
func TestNetworkPolicyOptIn(t *testing.T) {
	testenv.SkipShort(t)
	if np := find(render(t), "NetworkPolicy", "teardown-controller"); np != nil {
		t.Fatal("a NetworkPolicy is rendered by default")
	}
	np := find(render(t, "--set", "networkPolicy.enabled=true", "--set", "inUseWebhook.enabled=true",
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring"), "NetworkPolicy", "teardown-controller")
	if np == nil {
		t.Fatal("no NetworkPolicy with networkPolicy.enabled")
	}
	if got := get(np, "spec", "policyTypes"); !reflect.DeepEqual(got, []any{"Ingress"}) {
		t.Errorf("policyTypes = %v, want [Ingress] (egress open)", got)
	}
	if got := get(np, "spec", "podSelector", "matchLabels", "app.kubernetes.io/name"); got != "teardown-controller" {
		t.Errorf("podSelector = %v", get(np, "spec", "podSelector"))
	}
	ports := map[float64]any{}
	rules, _ := get(np, "spec", "ingress").([]any)
	for i := range rules {
		ports[get(np, "spec", "ingress", i, "ports", 0, "port").(float64)] = get(np, "spec", "ingress", i, "from")
	}
	if len(ports) != 3 || ports[8081] != nil || ports[9443] != nil {
		t.Errorf("ingress = %v, want the probe port 8081 and the webhook port 9443 from anywhere, and the metrics port", rules)
	}
	if from := ports[8443]; get(map[string]any{"f": from}, "f", 0, "namespaceSelector", "matchLabels", "team") != "monitoring" {
		t.Errorf("the metrics port is open to %v, want networkPolicy.metricsFrom", from)
	}
}

// TestMonitorScrapeSettings: the monitors' interval, scrapeTimeout and
// tlsConfig are values (issue 29, the anchors' chart conventions), the
// defaults those of config/monitoring.
func TestMonitorScrapeSettings(t *testing.T) {
	testenv.SkipShort(t)
	for _, m := range []struct{ kind, value, endpoints string }{
		{"ServiceMonitor", "serviceMonitor", "endpoints"},
		{"PodMonitor", "podMonitor", "podMetricsEndpoints"},
	} {
		t.Run(m.kind, func(t *testing.T) {
			on := []string{"--set", "metrics.enabled=true", "--set", m.value + ".enabled=true"}
			mon := find(render(t, on...), m.kind, "teardown-controller")
			if mon == nil {
				t.Fatalf("no %s with %s.enabled", m.kind, m.value)
			}
			ep := get(mon, "spec", m.endpoints, 0)
			want := map[string]any{"interval": "30s", "tlsConfig": map[string]any{"insecureSkipVerify": true}}
			if got := pick(ep, "interval", "scrapeTimeout", "tlsConfig"); !reflect.DeepEqual(got, want) {
				t.Errorf("default scrape settings = %v, want %v", got, want)
			}
			mon = find(render(t, append(on, "--set", m.value+".interval=1m", "--set", m.value+".scrapeTimeout=20s",
				"--set", m.value+".tlsConfig.insecureSkipVerify=null", "--set", m.value+".tlsConfig.serverName=teardown-controller.teardown-system.svc",
				"--set", m.value+".tlsConfig.ca.secret.name=teardown-ca", "--set", m.value+".tlsConfig.ca.secret.key=ca.crt")...), m.kind, "teardown-controller")
			want = map[string]any{"interval": "1m", "scrapeTimeout": "20s", "tlsConfig": map[string]any{
				"serverName": "teardown-controller.teardown-system.svc", "ca": map[string]any{"secret": map[string]any{"name": "teardown-ca", "key": "ca.crt"}}}}
			if got := pick(get(mon, "spec", m.endpoints, 0), "interval", "scrapeTimeout", "tlsConfig"); !reflect.DeepEqual(got, want) {
				t.Errorf("scrape settings from values = %v, want %v", got, want)
			}
		})
	}
}

// pick returns the keys of obj (a map) that are set.
func pick(obj any, keys ...string) map[string]any {
	m, _ := obj.(map[string]any)
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
