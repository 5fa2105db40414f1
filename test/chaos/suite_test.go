/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// One control plane serves every test; each test runs its own
// teardown-controller process(es), one test at a time.
var (
	env *testenv.Env
	cfg *rest.Config
	k8s client.Client
	cs  kubernetes.Interface
	// controllerCfg is what the controller processes run as: a superuser
	// (system:masters) under the user name of the shipped controller's
	// ServiceAccount, which the shipped admission policies exempt.
	controllerCfg *rest.Config
)

// controllerUser is the user name config/default's controller runs as.
const controllerUser = "system:serviceaccount:teardown-system:teardown-controller"

func TestMain(m *testing.M) {
	opts := testenv.Options{TeardownCRDs: true}
	testenv.Main(m, opts, func(e *testenv.Env) {
		env = e
		cfg = e.PollingConfig()
		var err error
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			panic(err)
		}
		if err := teardownv1alpha1.AddToScheme(scheme); err != nil {
			panic(err)
		}
		if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
		if cs, err = kubernetes.NewForConfig(cfg); err != nil {
			panic(err)
		}
		if err := createConfigMapRole(); err != nil {
			panic(err)
		}
		if controllerCfg, err = e.AddUser(controllerUser, "system:masters"); err != nil {
			panic(err)
		}
	})
}

// createConfigMapRole creates the ClusterRole teardown-chaos-configmaps
// (anything with ConfigMaps, the only kind most of these tests guard), for
// tests to bind to a ServiceAccount in one namespace. A TeardownPolicy acts
// as a ServiceAccount of its namespace ("default" unless it names one),
// which testenv.NewNamespace grants "edit" with a RoleBinding in that
// namespace, as a real cluster grants it: never cluster-wide here, or a
// namespace's deletion, which deletes its RoleBindings, would not take the
// rights away as it does in a real cluster (a cluster-wide grant hid that
// from these tests until 2026-11-27).
func createConfigMapRole() error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "teardown-chaos-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	}
	if err := k8s.Create(context.Background(), role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRole %s: %w", role.Name, err)
	}
	return nil
}

// logDir is where controller logs go: TEARDOWN_CHAOS_LOGS keeps them after
// the run; otherwise a folder removed with the test.
func logDir(t *testing.T) string {
	if d := os.Getenv("TEARDOWN_CHAOS_LOGS"); d != "" {
		dir := filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// newController prepares a teardown-controller process (not started); it is
// killed when the test ends, and its log tail is printed if the test failed.
func newController(t *testing.T, name, leaderElectionNamespace string, args ...string) *procctl.Controller {
	t.Helper()
	return newControllerOf(t, "", name, leaderElectionNamespace, args...)
}

// newControllerOf is newController running the binary bin ("": this tree's).
func newControllerOf(t *testing.T, bin, name, leaderElectionNamespace string, args ...string) *procctl.Controller {
	t.Helper()
	if bin == "" {
		if _, err := procctl.Build(filepath.Join(env.Dir, "bin")); err != nil {
			t.Fatalf("%v", err)
		}
	}
	c, err := procctl.New(procctl.Options{
		Name:                    name,
		Binary:                  bin,
		Dir:                     logDir(t),
		Config:                  controllerCfg,
		LeaderElectionNamespace: leaderElectionNamespace,
		Args:                    args,
		// The tests' cleanup servers listen on 127.0.0.1.
		IfSupported: []string{"--webhook-allowed-cidrs=127.0.0.0/8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Kill()
		if t.Failed() {
			t.Log(c.LogTail(40))
		}
	})
	return c
}

// startController starts one teardown-controller process.
func startController(t *testing.T, name string, args ...string) *procctl.Controller {
	t.Helper()
	c := newController(t, name, "", args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// newNamespace creates a namespace for the test; when the test ends (after
// its controllers are killed) it removes every finalizer left in it, as an
// administrator would, and deletes it, so that no later test's controller
// inherits its objects.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := testenv.NewNamespace(t, k8s)
	t.Cleanup(func() { forceDelete(ns) })
	return ns
}

func forceDelete(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	unblock := []byte(`{"metadata":{"finalizers":null}}`)
	cms := &corev1.ConfigMapList{}
	if err := k8s.List(ctx, cms, client.InNamespace(ns)); err == nil {
		for i := range cms.Items {
			if len(cms.Items[i].Finalizers) > 0 {
				_ = k8s.Patch(ctx, &cms.Items[i], client.RawPatch(types.MergePatchType, unblock))
			}
		}
	}
	pols := &teardownv1alpha1.TeardownPolicyList{}
	if err := k8s.List(ctx, pols, client.InNamespace(ns)); err == nil {
		for i := range pols.Items {
			_ = k8s.Patch(ctx, &pols.Items[i], client.RawPatch(types.MergePatchType, unblock))
		}
	}
	_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

// webhookRequest is the part of the controller's webhook request the tests
// read.
type webhookRequest struct {
	Step      string `json:"step"`
	Finalizer string `json:"finalizer"`
	Object    struct {
		Namespace string    `json:"namespace"`
		Name      string    `json:"name"`
		UID       types.UID `json:"uid"`
	} `json:"object"`
}

// answer is what the cleanup server replies: an HTTP status code and, for
// 2xx, a webhook status (Success, InProgress or Failure).
type answer struct {
	Code       int
	Status     string
	RetryAfter int
}

var (
	success    = answer{Code: http.StatusOK, Status: "Success"}
	inProgress = answer{Code: http.StatusOK, Status: "InProgress", RetryAfter: 1}
	serverErr  = answer{Code: http.StatusInternalServerError}
)

// cleanupServer is an external system's cleanup endpoint, on 127.0.0.1 over
// HTTPS with a certificate the policy trusts through CABundle. It keeps a
// ledger: the first Success it answered for each object UID (recorded before
// the answer is written, so before the controller can act on it), and how
// many calls each UID got, before and after that Success.
type cleanupServer struct {
	*httptest.Server
	CABundle []byte
	decide   func(req webhookRequest) answer

	mu                sync.Mutex
	calls             map[types.UID]int
	callsAfterSuccess map[types.UID]int
	firstSuccess      map[types.UID]time.Time
	stepSuccesses     map[string]int
	names             map[types.UID]string
	total             int
	log               []callRecord
}

// callRecord is one call the cleanup server answered.
type callRecord struct {
	At     time.Time
	UID    types.UID
	Step   string
	Answer answer
}

func newCleanupServer(t *testing.T, decide func(req webhookRequest) answer) *cleanupServer {
	t.Helper()
	s := &cleanupServer{
		decide:            decide,
		calls:             map[types.UID]int{},
		callsAfterSuccess: map[types.UID]int{},
		firstSuccess:      map[types.UID]time.Time{},
		stepSuccesses:     map[string]int{},
		names:             map[types.UID]string{},
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Listener = l
	s.StartTLS()
	t.Cleanup(s.Close)
	s.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return s
}

func (s *cleanupServer) serve(w http.ResponseWriter, r *http.Request) {
	var req webhookRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Object.UID == "" {
		http.Error(w, fmt.Sprintf("bad request: %v", err), http.StatusBadRequest)
		return
	}
	a := s.decide(req)
	s.mu.Lock()
	uid := req.Object.UID
	s.total++
	s.log = append(s.log, callRecord{At: time.Now(), UID: uid, Step: req.Step, Answer: a})
	s.calls[uid]++
	s.names[uid] = req.Object.Name
	if _, done := s.firstSuccess[uid]; done {
		s.callsAfterSuccess[uid]++
	}
	if a.Code/100 == 2 && a.Status == "Success" {
		if _, done := s.firstSuccess[uid]; !done {
			s.firstSuccess[uid] = time.Now()
		}
		s.stepSuccesses[req.Step]++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Code)
	if a.Code/100 == 2 {
		_ = json.NewEncoder(w).Encode(map[string]any{"status": a.Status, "message": "chaos test", "retryAfterSeconds": a.RetryAfter})
	} else {
		_, _ = w.Write([]byte(`{"message":"injected failure"}`))
	}
}

// succeeded returns the time of the first Success for uid.
func (s *cleanupServer) succeeded(uid types.UID) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.firstSuccess[uid]
	return at, ok
}

// callsOf is how many calls of step uid got.
func (s *cleanupServer) callsOf(uid types.UID, step string) int {
	return s.callsOfSince(uid, step, time.Time{})
}

// callsOfSince is how many calls of step uid got after since.
func (s *cleanupServer) callsOfSince(uid types.UID, step string, since time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.log {
		if c.UID == uid && c.Step == step && c.At.After(since) {
			n++
		}
	}
	return n
}

// successOf is when step first answered Success for uid after since.
func (s *cleanupServer) successOf(uid types.UID, step string, since time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.log {
		if c.UID == uid && c.Step == step && c.At.After(since) && c.Answer.Code/100 == 2 && c.Answer.Status == "Success" {
			return c.At, true
		}
	}
	return time.Time{}, false
}

// callsFor is how many calls uid got.
func (s *cleanupServer) callsFor(uid types.UID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[uid]
}

func (s *cleanupServer) step(name string) teardownv1alpha1.Step {
	url := s.URL + "/cleanup"
	return teardownv1alpha1.Step{Name: name, Webhook: &teardownv1alpha1.WebhookAction{URL: &url, CABundle: s.CABundle}}
}

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func configMapTarget(matchLabels map[string]string) teardownv1alpha1.Target {
	return teardownv1alpha1.Target{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{MatchLabels: matchLabels}}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func configMap(ns, name string, lbls map[string]string, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, Finalizers: finalizers}}
}

// finalizersOf returns an object's finalizers and whether it exists.
func finalizersOf(ctx context.Context, obj client.Object) ([]string, bool, error) {
	got := obj.DeepCopyObject().(client.Object)
	err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return got.GetFinalizers(), true, nil
}

func carries(ctx context.Context, obj client.Object, key string) (bool, error) {
	fins, _, err := finalizersOf(ctx, obj)
	for _, f := range fins {
		if f == key {
			return true, err
		}
	}
	return false, err
}

// readyCondition returns the policy's current Ready condition (nil if none
// for its generation).
func readyCondition(ctx context.Context, pol *teardownv1alpha1.TeardownPolicy) (*metav1.Condition, error) {
	got := &teardownv1alpha1.TeardownPolicy{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
		return nil, err
	}
	c := meta.FindStatusCondition(got.Status.Conditions, teardownv1alpha1.ReadyCondition)
	if c == nil || c.ObservedGeneration != got.Generation {
		return nil, nil
	}
	return c, nil
}

// waitReady waits for the policy's Ready condition of its generation and
// returns it.
func waitReady(t *testing.T, pol *teardownv1alpha1.TeardownPolicy, timeout time.Duration) metav1.Condition {
	t.Helper()
	var cond metav1.Condition
	testenv.Eventually(t, timeout, "policy "+pol.Name+"'s Ready condition", func(ctx context.Context) (bool, error) {
		c, err := readyCondition(ctx, pol)
		if c == nil || err != nil {
			return false, err
		}
		cond = *c
		return true, nil
	})
	return cond
}

// poll runs cond every interval until it returns true or timeout passes;
// it reports whether cond held.
func poll(timeout, interval time.Duration, cond func(ctx context.Context) (bool, error)) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, interval, true, cond) == nil
}

// monitor checks invariants every interval in the background and keeps the
// first occurrence of each violation, with when it was seen.
type monitor struct {
	stopCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	seen   map[string]bool
	list   []string
	start  time.Time
}

// startMonitor runs check every interval until stop; check returns the
// violations it sees now.
func startMonitor(interval time.Duration, check func(ctx context.Context) []string) *monitor {
	m := &monitor{stopCh: make(chan struct{}), done: make(chan struct{}), seen: map[string]bool{}, start: time.Now()}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			vs := check(ctx)
			cancel()
			m.mu.Lock()
			for _, v := range vs {
				if !m.seen[v] {
					m.seen[v] = true
					m.list = append(m.list, fmt.Sprintf("%s (at +%s)", v, time.Since(m.start).Round(time.Millisecond)))
				}
			}
			m.mu.Unlock()
			select {
			case <-m.stopCh:
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

// stop ends the monitor and returns every violation it saw.
func (m *monitor) stop() []string {
	close(m.stopCh)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.list...)
}
