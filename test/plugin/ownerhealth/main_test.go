/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"strings"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	kubeconfig string
	restConfig *rest.Config
	cs         kubernetes.Interface
	dyn        dynamic.Interface
)

// TestMain starts a control plane whose kube-controller-manager runs the
// deployment, replicaset and disruption controllers too: a Deployment's
// pods are created and stay Pending (no scheduler, no kubelet), so its
// ready count is a real 0, and a PodDisruptionBudget's status is computed
// from the pods' Ready conditions.
func TestMain(m *testing.M) {
	plugintest.Main(m, testenv.Options{
		CRDDirectoryPaths: []string{"testdata/crds"},
		Controllers:       []string{"garbagecollector", "namespace", "deployment", "replicaset", "disruption"},
	}, func(e *testenv.Env) {
		kubeconfig, restConfig = e.Kubeconfig, e.Config
		cs = kubernetes.NewForConfigOrDie(e.Config)
		dyn = dynamic.NewForConfigOrDie(e.Config)
	})
}

func needCluster(t *testing.T) {
	t.Helper()
	plugintest.NeedCluster(t, cs)
}

// run runs kubectl-teardown against this control plane.
func run(args ...string) plugintest.Result {
	return plugintest.Run(plugin.Execute, kubeconfig, args...)
}

// explain runs explain -o json and decodes the report.
func explain(t *testing.T, args ...string) *diagnose.Report {
	t.Helper()
	r := run(append([]string{"explain", "-o", "json"}, args...)...)
	if r.Code != plugin.ExitOK && r.Code != plugin.ExitBlocked {
		t.Fatalf("explain %v: exit %d: %s", args, r.Code, r.Err)
	}
	return plugintest.DecodeReport(t, r)
}

// blocked asserts that explain names a root blocker and never says
// nothing blocks.
func blocked(t *testing.T, rep *diagnose.Report, args ...string) {
	t.Helper()
	text := run(append([]string{"explain"}, args...)...)
	if !rep.Blocked || len(rep.RootBlockers) == 0 || strings.Contains(text.Out, "nothing is blocked") || text.Code != plugin.ExitBlocked {
		t.Fatalf("explain %v does not report a blocker (exit %d):\n%s\n%s", args, text.Code, text.Out, plugintest.Dump(rep))
	}
}

// root returns the root blocker with cause about name, failing the test
// without one.
func root(t *testing.T, rep *diagnose.Report, cause, name string) *diagnose.Finding {
	t.Helper()
	r := plugintest.Root(rep, cause, name)
	if r == nil {
		t.Fatalf("no root blocker %s on %q:\n%s", cause, name, plugintest.Dump(rep))
	}
	return r
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s = %q, want it to contain %q", what, s, sub)
		}
	}
}

// recordText writes explain's text output for docs/cli.md under -record.
func recordText(t *testing.T, file string, args ...string) {
	t.Helper()
	if plugintest.Recording() {
		plugintest.Record(t, file, run(args...), args...)
	}
}
