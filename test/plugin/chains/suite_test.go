/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chains

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	env        *testenv.Env
	kubeconfig string
	cs         kubernetes.Interface
)

// TestMain starts a control plane whose kube-controller-manager also runs
// the PersistentVolume binder and the pv- and pvc-protection controllers,
// and whose API server reports undecodable objects as corrupt
// (AllowUnsafeMalformedObjectDeletion, KEP-3926).
func TestMain(m *testing.M) {
	plugintest.Main(m, testenv.Options{
		Controllers:           append([]string{"persistentvolume-binder", "pv-protection", "pvc-protection"}, testenv.DefaultControllers...),
		APIServerFeatureGates: []string{"AllowUnsafeMalformedObjectDeletion=true"},
	}, func(e *testenv.Env) {
		env, kubeconfig = e, e.Kubeconfig
		cs = kubernetes.NewForConfigOrDie(e.Config)
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

// explain runs explain -o json and decodes its report; want is the exit code
// expected.
func explain(t *testing.T, want int, args ...string) *diagnose.Report {
	t.Helper()
	r := run(append([]string{"explain", "-o", "json"}, args...)...)
	rep := plugintest.DecodeReport(t, r)
	if r.Code != want {
		t.Fatalf("explain %v: exit %d, want %d\n%s%s", args, r.Code, want, plugintest.Dump(rep), r.Err)
	}
	return rep
}

// explainUntil polls explain until it reports cause about an object named
// name among its root blockers.
func explainUntil(t *testing.T, timeout time.Duration, cause, name string, args ...string) *diagnose.Report {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := run(append([]string{"explain", "-o", "json"}, args...)...)
		rep := &diagnose.Report{}
		_ = json.Unmarshal([]byte(r.Out), rep)
		if plugintest.Root(rep, cause, name) != nil {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("explain %v never named %s on %q as a root blocker (exit %d):\n%s%s", args, cause, name, r.Code, plugintest.Dump(rep), r.Err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// text runs a command in its text form and, with -record, writes it for
// docs/cli.md. It fails the test if the text says nothing blocks.
func text(t *testing.T, file string, args ...string) plugintest.Result {
	t.Helper()
	r := run(args...)
	noFalseReassurance(t, r.Out)
	plugintest.Record(t, file, r, args...)
	return r
}

// noFalseReassurance fails when explain's text says nothing blocks.
func noFalseReassurance(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{"PROGRESSING", "nothing is blocked"} {
		if strings.Contains(out, s) {
			t.Errorf("explain says %q:\n%s", s, out)
		}
	}
}
