//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMetricsAndAttachWebhook installs the chart with the attach-at-create
// webhook on (its certificate made by the chart) and a metrics reader:
// /metrics answers over HTTPS through the Service only to a token the API
// server authenticates and authorizes (401 without one, 403 for a
// ServiceAccount not bound to teardown-metrics-reader), and the API server
// calls the webhook through its Service, so a ConfigMap a policy targets
// carries the policy's key in the create response itself.
func TestMetricsAndAttachWebhook(t *testing.T) {
	const ns, key = "demo", "demo.teardown.dev/config-last"
	for _, sa := range []string{"e2e-scraper", "e2e-nobody"} {
		kubectl(t, "create", "serviceaccount", sa, "-n", "default")
	}
	samples := []string{
		filepath.Join(root, "config/samples/targets_clusterrole.yaml"),
		filepath.Join(root, "config/samples/quickstart.yaml"),
	}
	t.Cleanup(func() {
		if out, err := sh(context.Background(), "helm uninstall teardown -n teardown-system --wait --timeout 5m"); err != nil {
			t.Errorf("helm uninstall teardown: %v\n%s", err, out)
		}
		for i := len(samples) - 1; i >= 0; i-- {
			kubectl(t, "delete", "--ignore-not-found", "--timeout=2m", "-f", samples[i])
		}
		kubectl(t, "delete", "serviceaccount", "e2e-scraper", "e2e-nobody", "-n", "default")
		noLeftovers(t, 2*time.Minute)
	})
	// check.postInstall: helm install returns only once the chart's check
	// Pod passed in the cluster, the webhook's endpoints ready included.
	installController(t, "--set", "webhook.enabled=true", "--set", "check.postInstall=true",
		"--set-json", `metrics.readerSubjects=[{"kind":"ServiceAccount","name":"e2e-scraper","namespace":"default"}]`)
	checkRanAndWent(t)
	if out, err := sh(t.Context(), "kubectl teardown check --controller-namespace teardown-system"); err != nil ||
		!regexp.MustCompile(`ok +attach webhook +teardown-attach-finalizers: Service teardown-system/teardown-controller-webhook has 2 ready endpoints`).MatchString(out) {
		t.Fatalf("kubectl teardown check with the webhook on: %v\n%s", err, out)
	}

	ip := strings.TrimSpace(kubectl(t, "get", "service", "teardown-controller-metrics", "-n", "teardown-system", "-o", "jsonpath={.spec.clusterIP}"))
	url := "https://" + net.JoinHostPort(ip, "8443") + "/metrics"
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The chart's metrics certificate is self-signed; what is checked
		// here is who may read, not the certificate.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	get := func(token string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	scraper := strings.TrimSpace(kubectl(t, "create", "token", "e2e-scraper", "-n", "default"))
	nobody := strings.TrimSpace(kubectl(t, "create", "token", "e2e-nobody", "-n", "default"))
	for _, c := range []struct {
		who, token string
		want       int
	}{{"the metrics reader", scraper, http.StatusOK}, {"no token", "", http.StatusUnauthorized}, {"an unbound ServiceAccount", nobody, http.StatusForbidden}} {
		eventually(t, time.Minute, "/metrics for "+c.who, func() error {
			code, body, err := get(c.token)
			if err != nil {
				return err
			}
			if code != c.want {
				return fmt.Errorf("status %d, want %d", code, c.want)
			}
			if code == http.StatusOK && !strings.Contains(body, "teardown_") {
				return fmt.Errorf("no teardown_ metric in:\n%.500s", body)
			}
			return nil
		})
	}

	for _, s := range samples {
		kubectl(t, "apply", "-f", s)
	}
	kubectl(t, "wait", "teardownpolicy/config-last", "-n", ns, "--for=condition=Ready", "--timeout=1m")
	// The controller puts ConfigMaps in the webhook's rules once the policy
	// is in force; until then a create is not sent to it.
	manifest := filepath.Join(t.TempDir(), "cm.yaml")
	n := 0
	eventually(t, time.Minute, "the key in a create response", func() error {
		n++
		name := fmt.Sprintf("fresh-%d", n)
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels: {app: demo}\n", name, ns)
		if err := os.WriteFile(manifest, []byte(cm), 0o644); err != nil {
			return err
		}
		f := kubectl(t, "create", "-f", manifest, "-o", "jsonpath={.metadata.finalizers}")
		if !strings.Contains(f, key) {
			return fmt.Errorf("ConfigMap %s created with finalizers %q", name, f)
		}
		t.Logf("ConfigMap %s created with %s (attach webhook)", name, f)
		return nil
	})
}
