/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/admit"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// One control plane and one running teardown-controller serve every
// scenario in this package, as one would in a cluster.
var (
	env *testenv.Env
	cfg *rest.Config
	k8s client.Client
)

func TestMain(m *testing.M) {
	opts := testenv.Options{TeardownCRDs: true}
	testenv.Main(m, opts, func(e *testenv.Env) {
		env = e
		cfg = e.PollingConfig()
		if os.Getenv("TEARDOWN_TEST_LOG") != "" {
			ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
		}
		scheme, err := controller.NewScheme()
		if err != nil {
			panic(err)
		}
		if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
		webhookServer, err := installAttachWebhook(e.Dir)
		if err != nil {
			panic(err)
		}
		probes, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		probeAddr = probes.Addr().String()
		probes.Close()
		opts := controller.ManagerOptions{WebhookServer: webhookServer, ProbeAddr: probeAddr, Controller: controller.DefaultOptions()}
		opts.Controller.StatusInterval = time.Second
		// Diagnose stuck objects within seconds (diagnose_test.go).
		opts.Controller.DiagnoseAfter, opts.Controller.DiagnoseInterval = 2*time.Second, 2*time.Second
		opts.Controller.WebhookConfiguration = attachWebhookConfiguration
		// The in-use webhook is on, as the chart ships it, with its
		// configuration as the chart installs it, which the controller
		// narrows (inuse_test.go). Admission to storage takes milliseconds
		// here.
		if !inUseOff {
			if err := installInUseWebhook(context.Background()); err != nil {
				panic(err)
			}
			opts.Controller.InUseWebhook, opts.Controller.UnusedGrace = true, time.Second
		}
		// The cleanup servers listen on 127.0.0.1, which webhook steps call
		// only where the operator allows it.
		opts.Controller.WebhookAllowedCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		opts.Controller.ClusterResourceNamespace = clusterResourceNamespace
		mgr, err := controller.NewManager(cfg, opts)
		if err != nil {
			panic(err)
		}
		e.StartManager(mgr)
	})
}

func create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := k8s.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func del(t testing.TB, obj client.Object, opts ...client.DeleteOption) {
	t.Helper()
	if err := k8s.Delete(t.Context(), obj, opts...); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

func hasFinalizer(obj client.Object, key string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		got := obj.DeepCopyObject().(client.Object)
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, f := range got.GetFinalizers() {
			if f == key {
				return true, nil
			}
		}
		return false, nil
	}
}

func lacksFinalizer(obj client.Object, key string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		ok, err := hasFinalizer(obj, key)(ctx)
		return !ok && err == nil, err
	}
}

// statusOf reads a TeardownPolicy's or ClusterTeardownPolicy's status as it
// is now, and its generation.
func statusOf(ctx context.Context, pol client.Object) (teardownv1alpha1.TeardownPolicyStatus, int64, error) {
	got := pol.DeepCopyObject().(client.Object)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
		return teardownv1alpha1.TeardownPolicyStatus{}, 0, err
	}
	switch p := got.(type) {
	case *teardownv1alpha1.TeardownPolicy:
		return p.Status, p.Generation, nil
	case *teardownv1alpha1.ClusterTeardownPolicy:
		return p.Status, p.Generation, nil
	}
	return teardownv1alpha1.TeardownPolicyStatus{}, 0, fmt.Errorf("%T is not a policy", pol)
}

// ready waits for a policy's Ready condition and returns it.
func ready(t testing.TB, pol client.Object) metav1.Condition {
	t.Helper()
	var cond metav1.Condition
	testenv.Eventually(t, 20*time.Second, "the policy's Ready condition", func(ctx context.Context) (bool, error) {
		status, generation, err := statusOf(ctx, pol)
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(status.Conditions, teardownv1alpha1.ReadyCondition)
		if c == nil || c.ObservedGeneration != generation {
			return false, nil
		}
		cond = *c
		return true, nil
	})
	return cond
}

// mustBeReady fails unless the policy is served.
func mustBeReady(t testing.TB, pol client.Object) {
	t.Helper()
	if c := ready(t, pol); c.Status != metav1.ConditionTrue {
		t.Fatalf("policy not Ready: %s: %s", c.Reason, c.Message)
	}
}

func waitForEvent(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var note string
	testenv.Eventually(t, 20*time.Second, "a "+reason+" Event", func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				note = e.Note
				return true, nil
			}
		}
		return false, nil
	})
	return note
}

// cleanupServer is an external system's cleanup endpoint: it records each
// request and answers with what answer says for the nth call.
type cleanupServer struct {
	*httptest.Server
	CABundle []byte
	mu       sync.Mutex
	requests []steps.WebhookRequest
	answer   func(n int, req steps.WebhookRequest, w http.ResponseWriter)
}

// newCleanupServer serves HTTPS on 127.0.0.1 with a certificate the policy
// trusts through caBundle.
func newCleanupServer(t *testing.T, answer func(n int, req steps.WebhookRequest, w http.ResponseWriter)) *cleanupServer {
	t.Helper()
	s := &cleanupServer{answer: answer}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req steps.WebhookRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		n := len(s.requests)
		s.mu.Unlock()
		s.answer(n, req, w)
	}))
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

func (s *cleanupServer) calls() []steps.WebhookRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]steps.WebhookRequest(nil), s.requests...)
}

func (s *cleanupServer) webhookStep(name string) teardownv1alpha1.Step {
	url := s.URL + "/cleanup"
	return teardownv1alpha1.Step{Name: name, Webhook: &teardownv1alpha1.WebhookAction{URL: &url, CABundle: s.CABundle}}
}

func answerJSON(w http.ResponseWriter, code int, resp steps.WebhookResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(resp)
}

func selector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// attachWebhookConfiguration is the MutatingWebhookConfiguration the suite
// installs, as config/webhook does in a cluster.
const attachWebhookConfiguration = "teardown-attach-finalizers"

// webhookHost and webhookCA are where the suite's webhook server listens
// and the CA its certificate verifies with (installAttachWebhook).
var (
	webhookHost string
	webhookCA   []byte
)

// probeAddr serves the manager's /healthz and /readyz.
var probeAddr string

// installAttachWebhook serves the attach-at-create webhook on 127.0.0.1 with
// a self-signed certificate and registers it with the API server, with no
// rules: the controller fills them in from the policies.
func installAttachWebhook(dir string) (ctrlwebhook.Server, error) {
	w, err := testenv.InstallMutatingWebhook(context.Background(), k8s, dir, attachWebhookConfiguration, admit.Path,
		[]string{admit.WebhookName, admit.NamespacedWebhookName})
	if err != nil {
		return nil, err
	}
	webhookHost, webhookCA = w.Host, w.CA
	return w.Server, nil
}
