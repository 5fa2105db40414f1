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
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// reports collects what the agent pods POST: "POD PHASE RESULT" per API
// call, by the namespace in the URL's path.
type reports struct {
	mu    sync.Mutex
	lines map[string][]report
}

type report struct {
	at   time.Time // when the test received it
	text string    // POD PHASE RESULT
}

func (r *reports) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	ns := strings.Trim(req.URL.Path, "/")
	r.lines[ns] = append(r.lines[ns], report{at: time.Now(), text: string(b)})
	r.mu.Unlock()
}

// results counts the calls of phase in ns by result (an HTTP status, or
// "error").
func (r *reports) results(ns, phase string) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, l := range r.lines[ns] {
		if f := strings.Fields(l.text); len(f) == 3 && f[1] == phase {
			m[f[2]]++
		}
	}
	return m
}

// shutdownSince counts the shutdown calls of ns by result, in two windows
// from the first one: before early, and after late.
func (r *reports) shutdownSince(ns string, early, late time.Duration) (before, after map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before, after = map[string]int{}, map[string]int{}
	var first time.Time
	for _, l := range r.lines[ns] {
		f := strings.Fields(l.text)
		if len(f) != 3 || f[1] != "shutdown" {
			continue
		}
		if first.IsZero() {
			first = l.at
		}
		switch d := l.at.Sub(first); {
		case d < early:
			before[f[2]]++
		case d > late:
			after[f[2]]++
		}
	}
	return before, after
}

// TestSeed004AgentShutdown is seed 004 with real pods: a chart's DaemonSet
// agent whose pods, on SIGTERM, keep calling the API server with their
// ServiceAccount token for 8 s (test/e2e/images/agent), uninstalled with
// its chart by helm while the agent runs. Without a policy, helm deletes
// the ServiceAccount and the ClusterRoleBinding with the DaemonSet, and
// the agent's calls during shutdown fail (401 or 403): the negative
// control. With the hold-while-used ClusterTeardownPolicy
// (config/samples, an unused step) installed with the controller's chart,
// every call succeeds, and the ServiceAccount, ClusterRole and
// ClusterRoleBinding are gone once the pod is. A third agent shuts down for
// 85 s with the policy: its calls succeed for 60 s (70 s at most, with the
// API server's token cache), then get 401, which is Kubernetes' limit on a
// deleted pod's token, not Teardown's.
func TestSeed004AgentShutdown(t *testing.T) {
	ip := strings.TrimSpace(kubectl(t, "get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`))
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	rep := &reports{lines: map[string][]report{}}
	srv := &http.Server{Handler: rep, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	reportURL := "http://" + l.Addr().String()

	installController(t)
	kubectl(t, "apply", "-f", filepath.Join(root, "test/e2e/testdata/targets-rbac.yaml"))
	kubectl(t, "apply", "-f", filepath.Join(root, "config/samples/teardown.dev_v1alpha1_clusterteardownpolicy_unused.yaml"))
	t.Cleanup(func() {
		// The policy goes with the chart's pre-delete hook.
		if out, err := sh(context.Background(), "helm uninstall teardown -n teardown-system --wait --timeout 5m"); err != nil {
			t.Errorf("helm uninstall teardown: %v\n%s", err, out)
		}
		kubectl(t, "delete", "-f", filepath.Join(root, "test/e2e/testdata/targets-rbac.yaml"))
		noLeftovers(t, 2*time.Minute)
	})
	kubectl(t, "wait", "clusterteardownpolicy/hold-while-used", "--for=condition=Ready", "--timeout=1m")

	for _, tc := range []struct {
		ns   string
		held bool
		// shutdown is how long the agent calls the API after SIGTERM.
		shutdown int
	}{
		{"agents-plain", false, 8},
		{"agents-held", true, 8},
		// Kubernetes' limit, not Teardown's: a ServiceAccount token stops
		// authenticating 60 s (the token validator's leeway) after the
		// deletion of the pod it is bound to, or of its ServiceAccount,
		// began (up to 10 s later where the API server's token cache still
		// holds it). The policy keeps the ServiceAccount and RBAC, but a
		// shutdown longer than that loses the API all the same.
		{"agents-held-long", true, 85},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			ns := tc.ns
			kubectl(t, "create", "namespace", ns)
			if tc.held {
				kubectl(t, "label", "namespace", ns, "teardown.example.com/hold-while-used=true")
			}
			install := fmt.Sprintf("helm install agent test/e2e/testdata/agent -n %s --set image=%s/e2e-agent:dev --set reportURL=%s/%s --set holdWhileUsed=%t --set shutdownSeconds=%d --set terminationGracePeriodSeconds=%d",
				ns, registry, reportURL, ns, tc.held, tc.shutdown, tc.shutdown+20)
			if out, err := sh(t.Context(), install); err != nil {
				t.Fatalf("%s: %v\n%s", install, err, out)
			}
			eventually(t, 2*time.Minute, "the agent calling the API", func() error {
				if n := rep.results(ns, "running")["200"]; n < 2 {
					return fmt.Errorf("%d successful calls (%v)", n, rep.results(ns, "running"))
				}
				return nil
			})
			rbac := []string{"serviceaccount/node-agent", "clusterrole/" + ns + "-node-agent", "clusterrolebinding/" + ns + "-node-agent"}
			if tc.held {
				eventually(t, time.Minute, "the policy guarding the agent's identity", func() error {
					for _, o := range rbac {
						if f := kubectl(t, "get", o, "-n", ns, "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(f, "hold-while-used") {
							return fmt.Errorf("%s has finalizers %s", o, f)
						}
					}
					return nil
				})
			}
			start := time.Now()
			if out, err := sh(t.Context(), "helm uninstall agent -n "+ns); err != nil {
				t.Fatalf("helm uninstall agent: %v\n%s", err, out)
			}
			eventually(t, time.Duration(tc.shutdown)*time.Second+2*time.Minute, "the agent's pods gone", func() error {
				if out := kubectl(t, "get", "pods", "-n", ns, "-o", "name"); strings.TrimSpace(out) != "" {
					return fmt.Errorf("still there: %s", out)
				}
				return nil
			})
			down := rep.results(ns, "shutdown")
			t.Logf("calls during shutdown: %v (pods gone %s after helm uninstall)", down, time.Since(start).Round(100*time.Millisecond))
			total, ok := 0, down["200"]
			for _, n := range down {
				total += n
			}
			if total < 10 {
				t.Fatalf("the agent made %d calls while it shut down, want at least 10: %v", total, down)
			}
			if tc.shutdown > 60 {
				before, after := rep.shutdownSince(ns, 55*time.Second, 75*time.Second)
				t.Logf("calls in the first 55 s of shutdown: %s; after 75 s: %s", results(before), results(after))
				if before["200"] == 0 || len(before) != 1 {
					t.Errorf("in its first 55 s of shutdown every call should succeed: %s", results(before))
				}
				if after["401"] == 0 || len(after) != 1 {
					t.Errorf("past 60 s of shutdown, and the API server's 10 s token cache, every call should get 401 (the token validator's leeway): %s", results(after))
				}
			} else if tc.held && ok != total {
				t.Errorf("with the policy every call during shutdown should succeed: %v", results(down))
			} else if !tc.held && ok == total {
				t.Errorf("without a policy the agent should lose its API access while it shuts down (the negative control), but every call succeeded: %v", results(down))
			}
			if tc.held {
				eventually(t, time.Minute, "the agent's ServiceAccount and RBAC released and gone", func() error {
					out, _ := sh(t.Context(), "kubectl get "+strings.Join(rbac, " ")+" -n "+ns+" --ignore-not-found -o name")
					if strings.TrimSpace(out) != "" {
						return fmt.Errorf("still there: %s", out)
					}
					return nil
				})
			}
			kubectl(t, "delete", "namespace", ns, "--timeout=2m")
		})
	}
}

func results(m map[string]int) string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// installController installs the release make e2e published (publishRelease):
// the chart by version from the cluster's registry, with the image it pins
// by digest, as the README's quick start does, and waits for it.
// Extra arguments are passed to helm install (shell-quoted).
func installController(t *testing.T, extra ...string) {
	t.Helper()
	line := fmt.Sprintf("helm install teardown oci://%s/charts/teardown --version %s -n teardown-system --create-namespace --wait --timeout 3m",
		registry, releaseVersion)
	for _, a := range extra {
		line += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	if out, err := sh(t.Context(), line); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
}
