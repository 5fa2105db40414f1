/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// quickStart returns the command lines of the README's quick start: the sh
// block between <!-- quickstart --> and <!-- /quickstart -->, with lines
// continued by a backslash joined, blank and comment lines left out.
func quickStart(t *testing.T) []string {
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
	block = strings.TrimSpace(block)
	if !strings.HasPrefix(block, "```sh\n") || !strings.HasSuffix(block, "\n```") {
		t.Fatalf("the quick start is not one ```sh block:\n%s", block)
	}
	block = strings.TrimSuffix(strings.TrimPrefix(block, "```sh\n"), "\n```")
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

// qsStep is what the test expects of one command of the quick start.
type qsStep struct {
	// cmd matches the command line; the README's lines and the steps pair
	// up in order.
	cmd *regexp.Regexp
	// during runs while the command runs (a stand-in for what the cluster
	// would do meanwhile).
	during func()
	// notRun, when set, says why the command is not run here.
	notRun string
	// check is given the command's output (stdout and stderr) once it
	// exited 0; an error fails the step, or, with retry, runs the command
	// again until retry has passed (read-only commands, which a person
	// would run again).
	check func(out string) error
	retry time.Duration
	// after runs once the check passed.
	after func()
}

// TestQuickStart runs the README's quick start, each line with bash as a
// person would type it, from the repository's root, against the local
// control plane (KUBECONFIG), with bin/helm (or TEARDOWN_HELM), bin/k8s/kubectl and a
// kubectl-teardown built from this tree first on PATH.
//
// There is no kubelet (nor Deployment or Job controller) here, so the test
// stands in for them around the README's commands, never changing them:
// after helm install it runs the teardown-controller out of process as the
// chart's ServiceAccount with the Deployment's flags and reports the
// Deployment rolled out; during helm uninstall it runs the pre-delete hook
// Job's command as the Job's ServiceAccount and marks the Job complete;
// after helm uninstall it stops the controller, as removing the Deployment
// would. The app's pod is never scheduled, so deleting it is immediate.
// The chart is installed by version from an OCI registry (chartRegistry),
// as the README says; its first line, which checks the release's
// signatures, is not run here (nothing is signed): make e2e runs it on the
// release it publishes.
func TestQuickStart(t *testing.T) {
	testenv.SkipShort(t)
	start := time.Now()
	c := newCluster(t)
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	pluginDir := filepath.Join(c.dir, "plugin")
	build := exec.Command("go", "build", "-o", filepath.Join(pluginDir, "kubectl-teardown"), "./cmd/kubectl-teardown")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-teardown: %v\n%s", err, out)
	}
	// The release the README installs: its chart, served from a registry
	// over HTTPS that SSL_CERT_FILE trusts (the image it names is never
	// pulled: the controller runs out of process here).
	const version = "v0.0.0-quickstart"
	registry, caFile := chartRegistry(t, version)
	envv := append(os.Environ(),
		"KUBECONFIG="+env.Kubeconfig,
		"REGISTRY="+registry, "VERSION="+version, "SSL_CERT_FILE="+caFile,
		"PATH="+strings.Join([]string{pluginDir, filepath.Dir(helmPath), filepath.Join(root, "bin"), assets, os.Getenv("PATH")}, string(os.PathListSeparator)),
	)
	t.Logf("built the controller and the plugin in %s", time.Since(start).Round(time.Millisecond))
	// An earlier test of the package may have left its controller's
	// leader election Lease, held until it expires when that controller
	// stopped after its RBAC went; the quick start's controller should not
	// wait for it.
	if err := c.admin.DeleteAllOf(t.Context(), &coordinationv1.Lease{}, client.InNamespace(releaseNS)); err != nil {
		t.Fatal(err)
	}

	const ns, key = "demo", "demo.teardown.dev/config-last"
	var ctl *procctl.Controller
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
	steps := []qsStep{{
		cmd:    regexp.MustCompile(`^go -C hack/tools/release run \. verify -key \$\{COSIGN_PUB:\?[^}]*\} \$\{REGISTRY:\?[^}]*\}/teardown-controller:\$\{VERSION:\?[^}]*\} \$REGISTRY/charts/teardown:\$VERSION\b`),
		notRun: "nothing here is signed; make e2e runs it against the release it signed and pushed",
	}, {
		cmd:   regexp.MustCompile(`^kubectl apply -f config/samples/targets_clusterrole\.yaml\b`),
		check: contains("clusterrole.rbac.authorization.k8s.io/teardown-targets-services-configmaps"),
	}, {
		cmd:   regexp.MustCompile(`^helm install teardown oci://\$REGISTRY/charts/teardown --version \$VERSION -n teardown-system --create-namespace\b`),
		check: contains("STATUS: deployed"),
		after: func() {
			// Stand-in for the Deployment's pods: the controller, as the
			// chart's ServiceAccount, with the rendered Deployment's flags.
			ctl = c.startController("quickstart")
			c.reportRolledOut("teardown-controller")
			c.reportEndpoint("teardown-controller-webhook")
		},
	}, {
		cmd:   regexp.MustCompile(`^kubectl rollout status deployment/teardown-controller -n teardown-system\b`),
		check: contains(`deployment "teardown-controller" successfully rolled out`),
	}, {
		// The controller process leads; the Deployment reports ready.
		cmd:   regexp.MustCompile(`^kubectl teardown check --controller-namespace teardown-system\b`),
		check: contains("ok    CRDs ", "ok    admission policies ", "ok    controller ", "ok    versions "),
	}, {
		cmd: regexp.MustCompile(`^kubectl apply -f config/samples/quickstart\.yaml\b`),
		check: contains("namespace/demo created", "rolebinding.rbac.authorization.k8s.io/teardown-config-last created",
			"configmap/app-config created", "configmap/app-settings created", "teardownpolicy.teardown.dev/config-last created"),
	}, {
		cmd:   regexp.MustCompile(`^kubectl wait teardownpolicy/config-last -n demo --for=jsonpath='\{\.status\.guarded\}'=2\b`),
		check: contains("teardownpolicy.teardown.dev/config-last condition met"),
	}, {
		cmd: regexp.MustCompile(`^kubectl get teardownpolicies -n demo\b`),
		check: func(out string) error {
			return tableRow(out, "config-last", map[string]string{"FINALIZER": key, "ATTACH": "Automatic", "GUARDED": "2", "READY": "True"})
		},
	}, {
		cmd:   regexp.MustCompile(`^kubectl run app -n demo --image=\S+ --labels=app=demo\b`),
		check: contains("pod/app created"),
	}, {
		cmd:   regexp.MustCompile(`^kubectl delete configmap app-config -n demo --wait=false\b`),
		check: contains(`configmap "app-config" deleted`),
	}, {
		// What it waits on shows once the controller started the step.
		cmd:   regexp.MustCompile(`^kubectl teardown status -A\b`),
		retry: 20 * time.Second,
		check: func(out string) error {
			if err := tableRow(out, "app-config", map[string]string{"NAMESPACE": ns, "KIND": "ConfigMap"}); err != nil {
				return err
			}
			return contains(key+": ", "app-pods-gone")(out)
		},
		after: func() {
			cm := &corev1.ConfigMap{}
			if err := c.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-config"}, cm); err != nil || cm.DeletionTimestamp == nil {
				t.Fatalf("app-config should be Terminating while the app's pod is there: %v %v", err, cm.DeletionTimestamp)
			}
		},
	}, {
		cmd:   regexp.MustCompile(`^kubectl delete pod app -n demo\b`),
		check: contains(`pod "app" deleted`),
	}, {
		cmd:   regexp.MustCompile(`^kubectl wait configmap/app-config -n demo --for=delete\b`),
		check: func(string) error { return nil },
		after: func() {
			if err := c.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-config"}, &corev1.ConfigMap{}); err == nil {
				t.Fatal("app-config is still there")
			}
		},
	}, {
		cmd:    regexp.MustCompile(`^helm uninstall teardown -n teardown-system\b`),
		during: func() { c.playUninstallHook(ctl) },
		check:  contains(`release "teardown" uninstalled`),
		after: func() {
			// The Deployment is gone, and its pods with it.
			if err := ctl.Stop(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			c.noTeardownLeft(ns, key)
		},
	}, {
		cmd: regexp.MustCompile(`^kubectl get configmaps -n demo -l app=demo -o custom-columns=NAME:\.metadata\.name,FINALIZERS:\.metadata\.finalizers\b`),
		check: func(out string) error {
			return tableRow(out, "app-settings", map[string]string{"FINALIZERS": "<none>"})
		},
	}, {
		cmd:   regexp.MustCompile(`^kubectl get teardownpolicies -A\b`),
		check: contains("No resources found"),
	}, {
		cmd:   regexp.MustCompile(`^kubectl delete namespace demo\b`),
		check: contains(`namespace "demo" deleted`),
		after: func() {
			if err := c.admin.Get(t.Context(), client.ObjectKey{Name: ns}, &corev1.Namespace{}); err == nil {
				t.Fatal("namespace demo is still there")
			}
		},
	}}

	lines := quickStart(t)
	if len(lines) != len(steps) {
		t.Fatalf("the README's quick start has %d commands, the test expects %d:\n%s", len(lines), len(steps), strings.Join(lines, "\n"))
	}
	for i, line := range lines {
		if !steps[i].cmd.MatchString(line) {
			t.Fatalf("quick start command %d is %q, the test expects one matching %s", i+1, line, steps[i].cmd)
		}
	}
	for i, line := range lines {
		s := steps[i]
		if s.notRun != "" {
			t.Logf("$ %s\n(not run: %s)", line, s.notRun)
			continue
		}
		stepStart := time.Now()
		deadline := stepStart.Add(s.retry)
		for attempt := 1; ; attempt++ {
			out, err := runLine(t, line, envv, s.during)
			if err != nil {
				t.Fatalf("quick start command %d: %s: %v\n%s", i+1, line, err, out)
			}
			if err = s.check(out); err == nil {
				t.Logf("$ %s\n%s(%s)", line, out, time.Since(stepStart).Round(time.Millisecond))
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("quick start command %d: %s: %v (attempt %d)\n%s", i+1, line, err, attempt, out)
			}
			time.Sleep(time.Second)
		}
		if s.after != nil {
			s.after()
		}
	}
	t.Logf("quick start: %s", time.Since(start).Round(time.Millisecond))
}

// runLine runs one line with bash, during (if any) meanwhile, and returns
// its stdout and stderr.
func runLine(t *testing.T, line string, envv []string, during func()) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = root, envv
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	if during != nil {
		during()
	}
	err := cmd.Wait()
	return out.String(), err
}

// tableRow checks that the table out has a row whose first cell is name
// (NAME's, or the first column's) with the given cells.
func tableRow(out, name string, want map[string]string) error {
	var header []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		row := map[string]string{}
		for i, h := range header {
			if i < len(f) {
				row[h] = f[i]
			}
		}
		if row["NAME"] != name {
			continue
		}
		for k, v := range want {
			if row[k] != v {
				return fmt.Errorf("%s: %s is %q, want %q", name, k, row[k], v)
			}
		}
		return nil
	}
	return fmt.Errorf("no row %s", name)
}

// reportEndpoint stands in for the EndpointSlice controller: Service name
// (the admission webhooks', on by default) has a ready endpoint, as the
// controller's ready pods give it. The address (TEST-NET-1, RFC 5737: the
// API server refuses loopback) is never dialled: the API server calls a
// webhook through the Service's cluster IP, and no pod here is in a
// namespace the in-use webhook asks about.
func (c *cluster) reportEndpoint(name string) {
	t := c.t
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-standin", Namespace: releaseNS, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("webhook"), Port: ptr.To[int32](9443)}},
	}
	if err := c.admin.Create(t.Context(), slice); err != nil {
		t.Fatalf("reporting the webhook Service's endpoint: %v", err)
	}
	t.Cleanup(func() { _ = c.admin.Delete(context.Background(), slice) })
}

// reportRolledOut stands in for the Deployment controller and the kubelet:
// the Deployment's replicas are up to date and available, as kubectl
// rollout status wants them.
func (c *cluster) reportRolledOut(name string) {
	t := c.t
	d := &appsv1.Deployment{}
	if err := c.admin.Get(t.Context(), client.ObjectKey{Namespace: releaseNS, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	n := int32(1)
	if d.Spec.Replicas != nil {
		n = *d.Spec.Replicas
	}
	now := metav1.Now()
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
		},
	}
	if err := c.admin.Status().Update(t.Context(), d); err != nil {
		t.Fatalf("reporting the Deployment rolled out: %v", err)
	}
}
