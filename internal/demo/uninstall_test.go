/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package demo

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestOrderedUninstall runs the demo's policy scenario against a real
// control plane and the teardown-controller, and checks that the narration
// shows what a person should see, in order.
func TestOrderedUninstall(t *testing.T) {
	testenv.SkipShort(t)
	env, err := testenv.Start(testenv.Options{TeardownCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	var log bytes.Buffer
	logOut := NewOutput(&log) // the controller writes from many goroutines
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := StartController(ctx, env.Config, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logOut))))
	if err != nil {
		t.Fatal(err)
	}
	env.BeforeStop(func() {
		cancel()
		if err := wait(); err != nil {
			t.Errorf("the controller stopped with %v", err)
		}
	})
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	opts := DefaultUninstallOptions()
	opts.ShutdownAfter = time.Second
	if err := OrderedUninstall(t.Context(), c, NewOutput(&out), opts); err != nil {
		t.Fatalf("the scenario failed: %v\nits narration:\n%s", err, out.String())
	}
	// What the narration must show, in this order.
	want := []string{
		`Ready=True \(Serving\): guarding 3 target kind\(s\) with finalizer teardown.dev/agent-rbac-last`,
		`ClusterRoleBinding node-agent guarded: finalizers=\[teardown.dev/agent-rbac-last\]`,
		`Uninstalling everything at once`,
		`ClusterRole node-agent Terminating, finalizers=\[teardown.dev/agent-rbac-last\]`,
		`policy status: guarded=3 terminating=3 blocked=3`,
		`blockedObjects: ClusterRole node-agent: step pods-gone, StepInProgress since [0-9:]+: 2 pods of DaemonSet agents/node-agent still run with this ClusterRole's rights \(through ClusterRoleBinding node-agent\)`,
		`kubelet: pod node-agent-1 stopped`,
		`Pod agents/node-agent-1 deleted`,
		`ClusterRole node-agent deleted: the unused step found no pod using it`,
		`policy status: guarded=0 terminating=0 blocked=0`,
		`Done: the RBAC objects stayed Terminating while the pods shut down`,
	}
	rest := out.String()
	for _, w := range want {
		loc := regexp.MustCompile(w).FindStringIndex(rest)
		if loc == nil {
			t.Fatalf("the narration lacks %q after the lines before it:\n%s", w, out.String())
		}
		rest = rest[loc[1]:]
	}
	logOut.mu.Lock()
	defer logOut.mu.Unlock()
	if logged := log.String(); strings.Contains(logged, "\nE") || strings.HasPrefix(logged, "E") {
		t.Errorf("the controller logged errors during the scenario:\n%s", logged)
	}
}
