/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	kubeconfig string
	restConfig *rest.Config
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	env        *testenv.Env
)

// TestMain starts a control plane whose kube-controller-manager runs the
// garbage collector and the namespace controller only: no deployment
// controller, so a Deployment's status says what a test wrote (a running
// operator, or one at 0 ready replicas), as no pod of it ever runs here.
func TestMain(m *testing.M) {
	plugintest.Main(m, testenv.Options{Controllers: []string{"garbagecollector", "namespace"}}, func(e *testenv.Env) {
		env, kubeconfig, restConfig = e, e.Kubeconfig, e.Config
		cs = kubernetes.NewForConfigOrDie(e.Config)
		dyn = dynamic.NewForConfigOrDie(e.Config)
	})
}

func needCluster(t *testing.T) {
	t.Helper()
	plugintest.NeedCluster(t, cs)
}

// report is the part of explain's JSON these scenarios judge, decoded into
// types of their own (not diagnose.Report) so that the files compile
// against every version of the engine they measure.
type report struct {
	Blocked          bool      `json:"blocked"`
	Verdict          string    `json:"verdict"`
	ProgressEvidence []string  `json:"progressEvidence"`
	Checked          []string  `json:"checked"`
	Unreadable       bool      `json:"unreadable"`
	Access           []access  `json:"access"`
	Findings         []finding `json:"findings"`
	RootBlockers     []finding `json:"rootBlockers"`
}

type access struct {
	Version, Read, Write string
}

type ref struct {
	Kind, Namespace, Name string
}

type owner struct {
	Component, Source, Manager, State, Confidence, ServiceAccount string
	Workload                                                      *ref
	Evidence                                                      []string
}

type finding struct {
	Cause, Catalog, Severity, Finalizer, Message, Remedy, Leaks string
	Object                                                      *ref
	Owner                                                       *owner
	Children                                                    []finding
}

// explain runs `kubectl teardown explain -o json` and decodes its report.
// A run that ends without a report (the engine gave up on an error) fails
// the test with what it printed.
func explain(t *testing.T, args ...string) *report {
	t.Helper()
	r := plugintest.Run(plugin.Execute, kubeconfig, append([]string{"explain", "-o", "json"}, args...)...)
	rep := &report{}
	if err := json.Unmarshal([]byte(r.Out), rep); err != nil || (r.Code != plugin.ExitOK && r.Code != plugin.ExitBlocked) {
		t.Fatalf("explain %v ended without a report (exit %d): %s%s", args, r.Code, r.Out, r.Err)
	}
	return rep
}

// text runs explain in its text form.
func text(args ...string) plugintest.Result {
	return plugintest.Run(plugin.Execute, kubeconfig, append([]string{"explain"}, args...)...)
}

// root returns the root blocker with cause, failing the test without one.
func root(t *testing.T, rep *report, cause string) finding {
	t.Helper()
	for _, f := range rep.RootBlockers {
		if f.Cause == cause {
			return f
		}
	}
	t.Fatalf("no root blocker %s; root blockers:\n%s", cause, dump(rep.RootBlockers))
	return finding{}
}

// find returns the first finding, in tree order, about finalizer fin (""
// for any) with one of causes (none: any).
func find(rep *report, fin string, causes ...string) *finding {
	var walk func(fs []finding) *finding
	walk = func(fs []finding) *finding {
		for i := range fs {
			f := &fs[i]
			if (fin == "" || f.Finalizer == fin) && (len(causes) == 0 || contains(causes, f.Cause)) {
				return f
			}
			if got := walk(f.Children); got != nil {
				return got
			}
		}
		return nil
	}
	return walk(rep.Findings)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func dump(v any) string {
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s = %q, want it to contain %q", what, s, sub)
		}
	}
}

func mustNotContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			t.Errorf("%s = %q, want it not to contain %q", what, s, sub)
		}
	}
}
