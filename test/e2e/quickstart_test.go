//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeQuickStart returns the command lines of the README's quick start:
// the sh block between <!-- quickstart --> and <!-- /quickstart -->, with
// lines continued by a backslash joined, blank and comment lines left out
// (as internal/chart's TestQuickStart reads it).
func readmeQuickStart(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- quickstart -->\n")
	block, _, ok2 := strings.Cut(rest, "<!-- /quickstart -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- quickstart --> ... <!-- /quickstart --> block")
	}
	block = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(block), "```sh\n"), "\n```")
	var lines []string
	cur := ""
	for _, l := range strings.Split(block, "\n") {
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\")
			continue
		}
		l = cur + l
		cur = ""
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
			lines = append(lines, s)
		}
	}
	return lines
}

// qsCheck is what the test expects of the README's commands that match cmd;
// every other command only has to exit 0.
type qsCheck struct {
	cmd *regexp.Regexp
	// check is given the command's output; an error fails, or, with retry,
	// runs the command again until retry has passed (read-only commands).
	check func(out string) error
	retry time.Duration
	// after runs once the check passed.
	after func(t *testing.T)
}

// TestQuickStart runs every command of the README's quick start as written,
// with bash, from the repository's root, against the real cluster, on the
// release make release published to the cluster's registry (REGISTRY,
// VERSION, COSIGN_PUB: publishRelease): its signatures checked, its chart
// installed by version, the image it pins pulled by digest, and the plugin
// installed from its archive first on PATH.
// Nothing stands in for a part of the cluster: the chart's two replicas
// run the image in pods and elect a leader, the app is a real pod, and
// helm uninstall runs the real pre-delete hook Job.
func TestQuickStart(t *testing.T) {
	start := time.Now()
	wantImage := releaseImage
	contains := func(want ...string) func(string) error {
		return func(out string) error {
			for _, w := range want {
				if !strings.Contains(out, w) {
					return fmt.Errorf("the output lacks %q", w)
				}
			}
			return nil
		}
	}
	checks := []qsCheck{{
		cmd: regexp.MustCompile(`^go -C hack/tools/release run \. verify\b`),
		check: contains("Verified "+registry+"/teardown-controller:"+releaseVersion+": "+releaseImage+" is signed by ",
			"Verified "+registry+"/charts/teardown:"+releaseVersion+": "),
	}, {
		cmd:   regexp.MustCompile(`^helm install teardown oci://\$REGISTRY/charts/teardown --version \$VERSION\b`),
		check: contains("Pulled: "+registry+"/charts/teardown:"+releaseVersion, "STATUS: deployed"),
	}, {
		cmd:   regexp.MustCompile(`^kubectl rollout status deployment/teardown-controller\b`),
		check: contains("successfully rolled out"),
		after: func(t *testing.T) { controllerPods(t, wantImage) },
	}, {
		cmd:   regexp.MustCompile(`^kubectl teardown check\b`),
		check: contains("ok    CRDs ", "ok    admission policies ", "ok    controller ", "ok    versions "),
		// The same checks from inside the cluster, as the chart ships
		// them: helm test's Pod runs the image as its own ServiceAccount.
		after: func(t *testing.T) { helmTest(t) },
	}, {
		cmd:   regexp.MustCompile(`^kubectl get teardownpolicies -n demo\b`),
		check: contains("demo.teardown.dev/config-last", "True"),
	}, {
		cmd:   regexp.MustCompile(`^kubectl run app\b`),
		check: contains("pod/app created"),
		after: func(t *testing.T) {
			eventually(t, 2*time.Minute, "the app's pod Running", func() error {
				if phase := kubectl(t, "get", "pod", "app", "-n", "demo", "-o", "jsonpath={.status.phase}"); phase != "Running" {
					return fmt.Errorf("phase %q", phase)
				}
				return nil
			})
		},
	}, {
		cmd:   regexp.MustCompile(`^kubectl teardown status -A\b`),
		check: contains("app-config", "demo.teardown.dev/config-last", "app-pods-gone"),
		retry: 30 * time.Second,
		after: func(t *testing.T) {
			ts := kubectl(t, "get", "configmap", "app-config", "-n", "demo", "-o", "jsonpath={.metadata.deletionTimestamp}")
			if ts == "" {
				t.Fatal("app-config should be Terminating while the app's pod runs")
			}
		},
	}, {
		cmd:   regexp.MustCompile(`^helm uninstall teardown\b`),
		check: contains(`release "teardown" uninstalled`),
		after: func(t *testing.T) {
			// The pre-delete hook really ran, as a Job whose pod ran the image.
			ev := kubectl(t, "get", "events", "-n", "teardown-system", "--field-selector", "involvedObject.kind=Job",
				"-o", "custom-columns=NAME:.involvedObject.name,REASON:.reason")
			if !regexp.MustCompile(`teardown-uninstall\s+Completed`).MatchString(ev) {
				t.Fatalf("no Completed event of the pre-delete hook Job:\n%s", ev)
			}
			eventually(t, 2*time.Minute, "the controller's pods gone", func() error {
				if out := kubectl(t, "get", "pods", "-n", "teardown-system", "-o", "name"); strings.TrimSpace(out) != "" {
					return fmt.Errorf("still there: %s", out)
				}
				return nil
			})
		},
	}, {
		cmd:   regexp.MustCompile(`^kubectl get configmaps -n demo -l app=demo\b`),
		check: contains("app-settings", "<none>"),
	}, {
		cmd:   regexp.MustCompile(`^kubectl get teardownpolicies -A\b`),
		check: contains("No resources found"),
	}}

	lines := readmeQuickStart(t)
	matched := map[int]bool{}
	for i, line := range lines {
		var c *qsCheck
		for j := range checks {
			if checks[j].cmd.MatchString(line) {
				c, matched[j] = &checks[j], true
				break
			}
		}
		stepStart := time.Now()
		deadline := stepStart.Add(0)
		if c != nil {
			deadline = stepStart.Add(c.retry)
		}
		for attempt := 1; ; attempt++ {
			out, err := sh(t.Context(), line)
			if err != nil {
				t.Fatalf("quick start command %d: %s: %v\n%s", i+1, line, err, out)
			}
			if c == nil || c.check == nil {
				t.Logf("$ %s\n%s(%s)", line, out, time.Since(stepStart).Round(time.Millisecond))
				break
			}
			if err := c.check(out); err == nil {
				t.Logf("$ %s\n%s(%s)", line, out, time.Since(stepStart).Round(time.Millisecond))
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("quick start command %d: %s: %v (attempt %d)\n%s", i+1, line, err, attempt, out)
			}
			time.Sleep(time.Second)
		}
		if c != nil && c.after != nil {
			c.after(t)
		}
	}
	for j, c := range checks {
		if !matched[j] {
			t.Errorf("the quick start has no command matching %s", c.cmd)
		}
	}
	noLeftovers(t, time.Minute)
	t.Logf("quick start on the real cluster: %s", time.Since(start).Round(time.Millisecond))
}

// controllerPods checks the chart's replicas: two pods Running and Ready on
// the node with the release's image, pulled by digest from the registry, one
// of which holds the leader election Lease.
func controllerPods(t *testing.T, wantImage string) {
	t.Helper()
	out := kubectl(t, "get", "pods", "-n", "teardown-system", "-l", "app.kubernetes.io/name=teardown-controller",
		"-o", `jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName} {.spec.containers[0].image} {.status.containerStatuses[0].ready}{"\n"}{end}`)
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 5 || f[1] != "Running" || f[3] != wantImage || f[4] != "true" {
			t.Fatalf("a controller pod is not Running and Ready with %s:\n%s", wantImage, out)
		}
		names = append(names, f[0])
	}
	if len(names) != 2 {
		t.Fatalf("want the chart's 2 replicas, got:\n%s", out)
	}
	eventually(t, time.Minute, "a replica holds the Lease", func() error {
		holder := kubectl(t, "get", "lease", "-n", "teardown-system", "-o", "jsonpath={.items[*].spec.holderIdentity}")
		for _, n := range names {
			if strings.HasPrefix(holder, n+"_") {
				t.Logf("leader: %s (of %s)", n, strings.Join(names, ", "))
				return nil
			}
		}
		return fmt.Errorf("Lease holder %q is none of %v", holder, names)
	})
}
