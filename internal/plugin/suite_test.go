/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The package's scenarios share one real control plane.
var (
	cfg            *rest.Config
	kubeconfigPath string
	cs             kubernetes.Interface
)

func TestMain(m *testing.M) {
	// The teardown.dev CRDs, so explain can name the policy that owns a
	// finalizer.
	plugintest.Main(m, testenv.Options{CRDDirectoryPaths: []string{"../../config/crd/bases"}}, func(e *testenv.Env) {
		cfg = e.Config
		kubeconfigPath = e.Kubeconfig
		cs = kubernetes.NewForConfigOrDie(cfg)
	})
}

// needCluster skips tests that need the control plane in unit-only runs.
func needCluster(t *testing.T) {
	t.Helper()
	plugintest.NeedCluster(t, cs)
}

var nsCounter atomic.Int64

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, mutate ...func(*corev1.Namespace)) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), nsCounter.Add(1))
	if len(name) > 60 {
		name = strings.TrimLeft(name[len(name)-60:], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"teardown-test": name}}}
	for _, m := range mutate {
		m(ns)
	}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// result of one CLI run.
type result struct {
	out, err string
	code     int
}

// requestLog records every request the CLI sends.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
}

type recordingTransport struct {
	next http.RoundTripper
	log  *requestLog
}

func (rt recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.log.add(r)
	return rt.next.RoundTrip(r)
}

// cli runs kubectl-teardown against the control plane with kubeconfig
// (admin if empty), recording its requests in log if not nil.
func cli(t *testing.T, kubeconfig string, log *requestLog, args ...string) result {
	t.Helper()
	if kubeconfig == "" {
		kubeconfig = kubeconfigPath
	}
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
	flags := genericclioptions.NewConfigFlags(true)
	cacheDir := t.TempDir()
	flags.CacheDir = &cacheDir
	if log != nil {
		flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
			c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{next: rt, log: log} })
			return c
		}
	}
	root := newRootCommand(flags, streams)
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	root.SetContext(t.Context())
	code := exitCode(root.Execute(), streams)
	return result{out: out.String(), err: errOut.String(), code: code}
}

// explainJSON runs explain -o json and decodes the report.
func explainJSON(t *testing.T, args ...string) *diagnose.Report {
	t.Helper()
	r := cli(t, "", nil, append([]string{"explain", "-o", "json"}, args...)...)
	if r.code != ExitOK && r.code != ExitBlocked {
		t.Fatalf("explain %v: exit %d: %s", args, r.code, r.err)
	}
	rep := &diagnose.Report{}
	if err := json.Unmarshal([]byte(r.out), rep); err != nil {
		t.Fatalf("decoding explain's JSON: %v\n%s", err, r.out)
	}
	if (r.code == ExitBlocked) != (rep.Blocked || rep.Verdict == diagnose.VerdictStalled) {
		t.Errorf("exit code %d but blocked=%v", r.code, rep.Blocked)
	}
	return rep
}

// explainUntil polls explain until a finding with cause about name appears.
func explainUntil(t *testing.T, timeout time.Duration, cause, name string, args ...string) (*diagnose.Report, *diagnose.Finding) {
	t.Helper()
	var rep *diagnose.Report
	var f *diagnose.Finding
	deadline := time.Now().Add(timeout)
	for {
		rep = explainJSON(t, args...)
		if f = plugintest.Find(rep, cause, name); f != nil {
			return rep, f
		}
		if time.Now().After(deadline) {
			t.Fatalf("explain %v never reported %s on %q:\n%s", args, cause, name, plugintest.Dump(rep))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// assertRemedy checks a finding carries a remedy mentioning want.
func assertRemedy(t *testing.T, f *diagnose.Finding, want string) {
	t.Helper()
	if f.Remedy == "" || !strings.Contains(f.Remedy, want) {
		t.Errorf("%s remedy = %q, want it to mention %q", f.Cause, f.Remedy, want)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
