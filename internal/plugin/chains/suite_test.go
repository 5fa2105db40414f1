/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chains

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var record = flag.Bool("record", false, "write the text output of the commands to ../testdata/docs, for docs/cli.md")

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
	flag.Parse()
	if os.Getenv("TEARDOWN_PLUGIN_UNIT_ONLY") != "" {
		os.Exit(m.Run())
	}
	testenv.Main(m, testenv.Options{
		Controllers:           append([]string{"persistentvolume-binder", "pv-protection", "pvc-protection"}, testenv.DefaultControllers...),
		APIServerFeatureGates: []string{"AllowUnsafeMalformedObjectDeletion=true"},
	}, func(e *testenv.Env) {
		env, kubeconfig = e, e.Kubeconfig
		cs = kubernetes.NewForConfigOrDie(e.Config)
	})
}

func needCluster(t *testing.T) {
	t.Helper()
	if cs == nil {
		t.Skip("no control plane (TEARDOWN_PLUGIN_UNIT_ONLY)")
	}
}

type result struct {
	out, err string
	code     int
}

// run runs kubectl-teardown against this control plane.
func run(args ...string) result {
	var out, errOut bytes.Buffer
	code := plugin.Execute(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, append([]string{"--kubeconfig", kubeconfig}, args...))
	return result{out.String(), errOut.String(), code}
}

// explain runs explain -o json and decodes its report; want is the exit code
// expected.
func explain(t *testing.T, want int, args ...string) *diagnose.Report {
	t.Helper()
	r := run(append([]string{"explain", "-o", "json"}, args...)...)
	rep := &diagnose.Report{}
	if err := json.Unmarshal([]byte(r.out), rep); err != nil {
		t.Fatalf("explain %v: exit %d, decoding its JSON: %v\n%s%s", args, r.code, err, r.out, r.err)
	}
	if r.code != want {
		t.Fatalf("explain %v: exit %d, want %d\n%s%s", args, r.code, want, dump(rep), r.err)
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
		_ = json.Unmarshal([]byte(r.out), rep)
		if root(rep, cause, name) != nil {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("explain %v never named %s on %q as a root blocker (exit %d):\n%s%s", args, cause, name, r.code, dump(rep), r.err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// text runs a command in its text form and, with -record, writes it for
// docs/cli.md. It fails the test if the text says nothing blocks.
func text(t *testing.T, file string, args ...string) result {
	t.Helper()
	r := run(args...)
	noFalseReassurance(t, r.out)
	if *record {
		var b bytes.Buffer
		b.WriteString("$ kubectl teardown " + strings.Join(args, " ") + "\n")
		b.WriteString(r.out)
		b.WriteString(r.err)
		if r.code != 0 {
			b.WriteString("(exit code " + string(rune('0'+r.code)) + ")\n")
		}
		if err := os.WriteFile(filepath.Join("..", "testdata", "docs", file), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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

func dump(rep *diagnose.Report) string {
	data, _ := json.MarshalIndent(rep, "", "  ")
	return string(data)
}

// root returns the root blocker with cause about an object named name.
func root(rep *diagnose.Report, cause, name string) *diagnose.Finding {
	for i, r := range rep.RootBlockers {
		if r.Cause == cause && (name == "" || (r.Object != nil && r.Object.Name == name)) {
			return &rep.RootBlockers[i]
		}
	}
	return nil
}

// find returns the first finding with cause about name ("" for any).
func find(rep *diagnose.Report, cause, name string) *diagnose.Finding {
	var got *diagnose.Finding
	diagnose.WalkFindings(rep.Findings, func(f *diagnose.Finding) {
		if got == nil && f.Cause == cause && (name == "" || (f.Object != nil && f.Object.Name == name)) {
			c := *f
			got = &c
		}
	})
	return got
}

var nsCounter atomic.Int64

// newNamespace creates a namespace named base-N for one test (short names
// read well in docs/cli.md, where some outputs are recorded).
func newNamespace(t *testing.T, base string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", base, nsCounter.Add(1))
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// releaseConfigMap drops a ConfigMap's finalizers at the end of a test.
func releaseConfigMap(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
}
