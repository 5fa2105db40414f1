//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// cleanups is the external system the e2e operator guards: it records each
// cleanup call ("NS/NAME/UID") it answered. A call takes 3 s, as a cloud
// API's deletion does; one the operator abandons (it stopped) is not
// recorded.
type cleanups struct {
	mu    sync.Mutex
	calls []string
}

func (c *cleanups) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	select {
	case <-req.Context().Done():
		return
	case <-time.After(3 * time.Second):
	}
	c.mu.Lock()
	c.calls = append(c.calls, string(b))
	c.mu.Unlock()
}

// made returns which of uids got a cleanup call.
func (c *cleanups) made(uids []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, call := range c.calls {
		if i := strings.LastIndex(call, "/"); i >= 0 && slices.Contains(uids, call[i+1:]) {
			out = append(out, call)
		}
	}
	return out
}

// operatorBundle is what one uninstall deletes together: a Widget in each
// application namespace, then the operator (its ServiceAccount, RBAC and
// Deployment in widget-system), in the order helm deletes a chart's
// objects (custom resources first).
func operatorBundle(image, cleanupURL string, apps []string) string {
	var b strings.Builder
	for _, ns := range apps {
		fmt.Fprintf(&b, "apiVersion: widgets.example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: %s}\n---\n", ns)
	}
	fmt.Fprintf(&b, `apiVersion: v1
kind: ServiceAccount
metadata: {name: widget-operator, namespace: widget-system, labels: {app.kubernetes.io/name: widget-operator}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-operator, labels: {app.kubernetes.io/name: widget-operator}}
rules:
- apiGroups: [widgets.example.com]
  resources: [widgets]
  verbs: [get, list, watch, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: widget-operator, labels: {app.kubernetes.io/name: widget-operator}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-operator}
subjects: [{kind: ServiceAccount, name: widget-operator, namespace: widget-system}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: widget-operator, namespace: widget-system, labels: {app.kubernetes.io/name: widget-operator}}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: widget-operator}}
  template:
    metadata: {labels: {app.kubernetes.io/name: widget-operator}}
    spec:
      serviceAccountName: widget-operator
      terminationGracePeriodSeconds: 5
      containers:
      - name: operator
        image: %s
        env: [{name: CLEANUP_URL, value: %q}]
`, image, cleanupURL)
	return b.String()
}

// TestOperatorLast is issue 28's proof on a real node: an operator of our
// own (test/e2e/images/widgetop) finalizes Widgets in three namespaces,
// calling an external system (an HTTP server of this test) before it
// removes its finalizer. The operator and its Widgets are uninstalled
// together, with one `kubectl delete -f` of a manifest holding both (in
// helm's order, custom resources first), then with one `helm uninstall` of
// a chart holding both while Teardown's leader is SIGKILLed mid-uninstall,
// then with the application namespaces deleted as the operator is.
// Without a policy the operator goes first and Widgets stay Terminating
// (the failure users report); with config/samples' operator-last
// ClusterTeardownPolicy every Widget's cleanup call is made, every Widget
// goes, and only then do the operator's Deployment, ServiceAccount and
// RBAC go.
func TestOperatorLast(t *testing.T) {
	ip := strings.TrimSpace(kubectl(t, "get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`))
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	system := &cleanups{}
	srv := &http.Server{Handler: system, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	apps := []string{"ol-a", "ol-b", "ol-c"}
	installController(t)
	t.Cleanup(func() {
		if out, err := sh(context.Background(), "helm uninstall teardown -n teardown-system --wait --timeout 5m"); err != nil {
			t.Errorf("helm uninstall teardown: %v\n%s", err, out)
		}
		kubectl(t, "delete", "--ignore-not-found", "-f", filepath.Join(root, "config/samples/operator_last_clusterrole.yaml"))
		noLeftovers(t, 2*time.Minute)
	})
	kubectl(t, "apply", "-f", filepath.Join(root, "config/samples/operator_last_clusterrole.yaml"))
	kubectl(t, "apply", "-f", filepath.Join(root, "test/e2e/testdata/operator-last/crd.yaml"))
	t.Cleanup(func() {
		kubectl(t, "delete", "--ignore-not-found", "--timeout=2m", "-f", filepath.Join(root, "test/e2e/testdata/operator-last/crd.yaml"))
	})
	kubectl(t, "wait", "crd/widgets.widgets.example.com", "--for=condition=Established", "--timeout=1m")
	for _, ns := range append([]string{"widget-system"}, apps...) {
		kubectl(t, "create", "namespace", ns)
	}
	bundle := filepath.Join(t.TempDir(), "widget-operator.yaml")
	if err := os.WriteFile(bundle, []byte(operatorBundle(registry+"/e2e-widgetop:dev", "http://"+l.Addr().String()+"/cleanup", apps)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// After a failure: whatever is left of the operator and its Widgets.
		kubectl(t, "delete", "--ignore-not-found", "--wait=false", "-f", bundle)
		unstickWidgets(t, apps)
		kubectl(t, "delete", "namespace", "--ignore-not-found", "--timeout=3m", "widget-system", apps[0], apps[1], apps[2])
	})

	t.Run("without a policy the Widgets stay Terminating", func(t *testing.T) {
		uids := installOperator(t, bundle, apps)
		kubectl(t, "delete", "-f", bundle, "--wait=false")
		eventually(t, 2*time.Minute, "the operator's pods gone", func() error {
			if out := kubectl(t, "get", "pods", "-n", "widget-system", "-o", "name"); strings.TrimSpace(out) != "" {
				return fmt.Errorf("still there: %s", out)
			}
			return nil
		})
		time.Sleep(10 * time.Second) // time enough for any cleanup in flight
		stuck := strings.Fields(kubectl(t, "get", "widgets", "-A", "-o", `jsonpath={range .items[?(@.metadata.deletionTimestamp)]}{.metadata.namespace}/{.metadata.name}{" "}{end}`))
		made := system.made(uids)
		t.Logf("cleanup calls made: %v; Widgets left Terminating: %v", made, stuck)
		if len(stuck) == 0 || len(made) == len(uids) {
			t.Errorf("without a policy the operator should go first and leave Widgets Terminating (the negative control): calls %v, stuck %v", made, stuck)
		}
		unstickWidgets(t, apps)
	})

	t.Run("with the operator-last policy every Widget is finalized, then the operator goes", func(t *testing.T) {
		operatorLast(t, system, apps, func() []string { return installOperator(t, bundle, apps) }, func() {
			kubectl(t, "delete", "-f", bundle, "--wait=false")
		})
	})

	t.Run("helm uninstall of a chart holding both, the controller's leader killed mid-uninstall", func(t *testing.T) {
		chart := filepath.Join(t.TempDir(), "widgets")
		if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o755); err != nil {
			t.Fatal(err)
		}
		manifest, err := os.ReadFile(bundle)
		if err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string][]byte{
			"Chart.yaml":            []byte("apiVersion: v2\nname: widgets\nversion: 0.1.0\n"),
			"templates/bundle.yaml": manifest,
		} {
			if err := os.WriteFile(filepath.Join(chart, name), content, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { _, _ = sh(context.Background(), "helm uninstall widgets -n widget-system --ignore-not-found") })
		install := func() []string {
			if out, err := sh(t.Context(), "helm install widgets "+chart+" -n widget-system"); err != nil {
				t.Fatalf("helm install widgets: %v\n%s", err, out)
			}
			return operatorRunning(t, apps)
		}
		operatorLast(t, system, apps, install, func() {
			if out, err := sh(t.Context(), "helm uninstall widgets -n widget-system"); err != nil {
				t.Fatalf("helm uninstall widgets: %v\n%s", err, out)
			}
			eventually(t, time.Minute, "the Widgets being deleted", func() error {
				if out := kubectl(t, "get", "widgets", "-A", "-o", `jsonpath={range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name}{" "}{end}`); len(strings.Fields(out)) != len(apps) {
					return fmt.Errorf("being deleted: %q", out)
				}
				return nil
			})
			leader, killed := killLeader(t)
			t.Logf("killed Teardown's leader %s mid-uninstall (SIGKILL); %s leads %s later", leader, leaseHolder(t), time.Since(killed).Round(100*time.Millisecond))
		})
	})

	// Last: it deletes the application namespaces.
	t.Run("the application namespaces deleted as the operator is uninstalled", func(t *testing.T) {
		operatorLast(t, system, apps, func() []string { return installOperator(t, bundle, apps) }, func() {
			kubectl(t, append([]string{"delete", "namespace", "--wait=false"}, apps...)...)
			kubectl(t, "delete", "-f", bundle, "--wait=false", "--ignore-not-found")
		})
		eventually(t, 2*time.Minute, "the application namespaces gone", func() error {
			if out := strings.TrimSpace(kubectl(t, append([]string{"get", "namespace", "--ignore-not-found", "-o", "name"}, apps...)...)); out != "" {
				return fmt.Errorf("still there: %s", out)
			}
			return nil
		})
	})
}

// operatorLast installs the operator and its Widgets under the sample
// operator-last policy, uninstalls them together, and checks that every
// Widget's cleanup call is made and every Widget goes before the operator's
// Deployment, ServiceAccount and RBAC go, and that nothing is left.
func operatorLast(t *testing.T, system *cleanups, apps []string, install func() []string, uninstall func()) {
	t.Helper()
	policy := filepath.Join(root, "config/samples/teardown.dev_v1alpha1_clusterteardownpolicy_operator_last.yaml")
	kubectl(t, "apply", "-f", policy)
	t.Cleanup(func() { kubectl(t, "delete", "--ignore-not-found", "--timeout=2m", "-f", policy) })
	kubectl(t, "wait", "clusterteardownpolicy/widget-operator-last", "--for=condition=Ready", "--timeout=1m")
	uids := install()
	operator := []string{"deployment/widget-operator", "serviceaccount/widget-operator", "clusterrole/widget-operator", "clusterrolebinding/widget-operator"}
	eventually(t, 2*time.Minute, "the policy guarding the operator", func() error {
		for _, o := range operator {
			if f := kubectl(t, "get", o, "-n", "widget-system", "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(f, "teardown.dev/widget-operator-last") {
				return fmt.Errorf("%s has finalizers %s", o, f)
			}
		}
		return nil
	})
	out, err := sh(t.Context(), "kubectl-teardown plan deployment/widget-operator -n widget-system")
	if want := "wait step widgets-gone: waits until no Widget is left in every namespace; now 3: ol-a/w, ol-b/w, ol-c/w (3 not being deleted"; err != nil || !strings.Contains(out, want) {
		t.Errorf("plan of the operator's Deployment: %v, want %q in:\n%s", err, want, out)
	}

	start := time.Now()
	uninstall()
	var widgetsGone time.Duration
	eventually(t, 5*time.Minute, "the Widgets, then the operator, gone", func() error {
		// The operator's objects first, then the Widgets: a Widget still
		// there after the Deployment was read as gone is one that existed
		// when it went. (Read the other way round, the last Widget can go,
		// and Teardown release the operator, between the two reads.)
		left := strings.TrimSpace(kubectl(t, append(append([]string{"get"}, operator...), "-n", "widget-system", "--ignore-not-found", "-o", "name")...))
		widgets := strings.TrimSpace(kubectl(t, "get", "widgets", "-A", "-o", "name"))
		if widgets != "" {
			if !strings.Contains(left, "deployment") {
				t.Fatalf("the operator's Deployment went while Widgets remain: %s (operator objects left: %q)", widgets, left)
			}
			return fmt.Errorf("Widgets left: %s", widgets)
		}
		if widgetsGone == 0 {
			widgetsGone = time.Since(start)
		}
		if left != "" {
			return fmt.Errorf("operator objects left: %s", left)
		}
		return nil
	})
	t.Logf("Widgets gone %s after the uninstall, the operator's objects %s after it", widgetsGone.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	if made := system.made(uids); len(made) != len(uids) {
		t.Errorf("cleanup calls made for %d of %d Widgets: %v", len(made), len(uids), made)
	}
	eventually(t, 2*time.Minute, "the operator's pods gone", func() error {
		if out := kubectl(t, "get", "pods", "-n", "widget-system", "-o", "name"); strings.TrimSpace(out) != "" {
			return fmt.Errorf("still there: %s", out)
		}
		return nil
	})
}

// installOperator applies the bundle and waits until the operator runs and
// has put its finalizer on every Widget; it returns the Widgets' UIDs.
func installOperator(t *testing.T, bundle string, apps []string) []string {
	t.Helper()
	kubectl(t, "apply", "-f", bundle)
	return operatorRunning(t, apps)
}

// operatorRunning waits until the operator runs and has put its finalizer
// on every Widget; it returns the Widgets' UIDs.
func operatorRunning(t *testing.T, apps []string) []string {
	t.Helper()
	kubectl(t, "rollout", "status", "deployment/widget-operator", "-n", "widget-system", "--timeout=5m")
	var uids []string
	eventually(t, 2*time.Minute, "the operator's finalizer on every Widget", func() error {
		uids = nil
		for _, ns := range apps {
			out := kubectl(t, "get", "widget/w", "-n", ns, "-o", "jsonpath={.metadata.uid} {.metadata.finalizers}")
			if !strings.Contains(out, "widgets.example.com/cleanup") {
				return fmt.Errorf("widget %s/w: %s", ns, out)
			}
			uids = append(uids, strings.Fields(out)[0])
		}
		return nil
	})
	return uids
}

// unstickWidgets removes the operator's finalizer from the Widgets left, as
// someone cleaning up by hand after the failure would, and waits for them
// to go.
func unstickWidgets(t *testing.T, apps []string) {
	t.Helper()
	for _, ns := range apps {
		if _, err := sh(context.Background(), "kubectl patch widget/w -n "+ns+` --type=merge -p '{"metadata":{"finalizers":null}}'`); err != nil {
			continue // gone, or never there
		}
	}
	eventually(t, time.Minute, "the Widgets gone", func() error {
		if out, _ := sh(context.Background(), "kubectl get widgets -A -o name --ignore-not-found"); strings.Contains(out, "widget") {
			return fmt.Errorf("still there: %s", out)
		}
		return nil
	})
}
