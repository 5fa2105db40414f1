/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package uninstall_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/uninstall"
)

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
		scheme, err := controller.NewScheme()
		if err != nil {
			panic(err)
		}
		if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
	})
}

// TestUninstall runs `teardown-controller uninstall` against a real control
// plane: first with no controller running, where it must time out naming
// the policies left and the docs, then with the controller and guarded
// objects, one of them mid-teardown, where it must wait for that teardown,
// release the rest and leave the CRDs.
func TestUninstall(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)

	t.Run("without a controller it times out naming the policies", func(t *testing.T) {
		// Policies as a controller that was removed leaves them: served,
		// so carrying the policy finalizer that only it removes.
		cluster := &teardownv1alpha1.ClusterTeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "stranded", Finalizers: []string{teardownv1alpha1.PolicyFinalizer}},
			Spec:       policySpec("stranded", nil),
		}
		tenant := &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "stranded", Namespace: ns, Finalizers: []string{teardownv1alpha1.PolicyFinalizer}},
			Spec:       policySpec("stranded", nil),
		}
		for _, p := range []client.Object{cluster, tenant} {
			if err := k8s.Create(t.Context(), p); err != nil {
				t.Fatal(err)
			}
		}
		var stdout, stderr testenv.SyncBuffer
		start := time.Now()
		code := uninstall.Main([]string{"--kubeconfig", env.Kubeconfig, "--timeout", "3s"}, &stdout, &stderr)
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		if code != uninstall.ExitFailed {
			t.Fatalf("exit code %d, want %d", code, uninstall.ExitFailed)
		}
		if d := time.Since(start); d < 3*time.Second || d > 20*time.Second {
			t.Errorf("returned after %s, want about the 3s timeout", d)
		}
		for _, want := range []string{"ClusterTeardownPolicy/stranded", "TeardownPolicy/stranded -n " + ns, uninstall.DocLink, "teardown-controller running"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q", want)
			}
		}
		if !strings.Contains(stdout.String(), "2 policies left") {
			t.Errorf("stdout lacks the progress line %q", "2 policies left")
		}
		// Both are deleted, held by their finalizer: release them by hand,
		// as the docs' recovery path does.
		for _, p := range []client.Object{cluster, tenant} {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
			if err := k8s.Patch(t.Context(), p, patch); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 10*time.Second, p.GetName()+" gone", testenv.Gone(k8s, p))
		}
	})

	t.Run("with the controller it waits for the teardowns and releases the rest", func(t *testing.T) {
		opts := controller.ManagerOptions{Controller: controller.DefaultOptions()}
		opts.Controller.StatusInterval = time.Second
		opts.Controller.WebhookAllowedCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		mgr, err := controller.NewManager(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		env.StartManager(mgr)

		var done atomic.Bool
		var calls atomic.Int32
		srv := newCleanupServer(t, func(w http.ResponseWriter) {
			calls.Add(1)
			if done.Load() {
				answerJSON(w, steps.WebhookResponse{Status: steps.WebhookSuccess})
				return
			}
			answerJSON(w, steps.WebhookResponse{Status: steps.WebhookInProgress, Message: "draining the shop", RetryAfterSeconds: 1})
		})
		url := srv.URL + "/cleanup"
		step := []teardownv1alpha1.Step{{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: &url, CABundle: srv.caBundle}}}
		cluster := &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop-hold"}, Spec: policySpec("shop", step)}
		tenant := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "tenant-hold", Namespace: ns}, Spec: policySpec("tenant", nil)}
		for _, p := range []client.Object{cluster, tenant} {
			if err := k8s.Create(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 30*time.Second, p.GetName()+" Ready", func(ctx context.Context) (bool, error) {
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
					return false, err
				}
				s := p.(teardownv1alpha1.PolicyObject).PolicyStatus()
				for _, c := range s.Conditions {
					if c.Type == teardownv1alpha1.ReadyCondition {
						if c.Status != metav1.ConditionTrue {
							t.Logf("%s: Ready=%s %s", p.GetName(), c.Status, c.Message)
						}
						return c.Status == metav1.ConditionTrue, nil
					}
				}
				return false, nil
			})
		}
		mid := configMap(ns, "mid-teardown", "shop")
		idle := configMap(ns, "idle", "shop")
		tenantCM := configMap(ns, "tenant-idle", "tenant")
		for _, o := range []*corev1.ConfigMap{mid, idle, tenantCM} {
			if err := k8s.Create(t.Context(), o); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range []*corev1.ConfigMap{mid, idle, tenantCM} {
			testenv.Eventually(t, 20*time.Second, o.Name+" guarded", func(ctx context.Context) (bool, error) {
				got := &corev1.ConfigMap{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
					return false, err
				}
				return len(teardownKeys(got)) > 0, nil
			})
		}
		if err := k8s.Delete(t.Context(), mid); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 20*time.Second, "the cleanup webhook called", func(context.Context) (bool, error) { return calls.Load() > 0, nil })

		var stdout testenv.SyncBuffer
		result := make(chan error, 1)
		go func() {
			result <- uninstall.RunConfig(context.Background(), cfg, uninstall.Options{
				Timeout: time.Minute, Interval: 200 * time.Millisecond, ReportEvery: time.Second, Out: &stdout})
		}()
		// The cluster policy waits for the teardown it started, and says so.
		testenv.Eventually(t, 20*time.Second, "uninstall to report the teardown it waits for", func(context.Context) (bool, error) {
			return strings.Contains(stdout.String(), "ClusterTeardownPolicy/shop-hold: waiting for 1 teardown(s)"), nil
		})
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(mid), &corev1.ConfigMap{}); err != nil {
			t.Fatalf("the object mid-teardown went before its cleanup finished: %v", err)
		}
		select {
		case err := <-result:
			t.Fatalf("uninstall returned %v while a teardown is in progress", err)
		default:
		}
		done.Store(true)
		select {
		case err := <-result:
			if err != nil {
				t.Fatalf("uninstall: %v\n%s", err, stdout.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("uninstall did not return\n%s", stdout.String())
		}
		t.Logf("stdout:\n%s", stdout.String())
		if !strings.Contains(stdout.String(), "Every policy is gone") {
			t.Errorf("stdout lacks the final line")
		}

		// The object mid-teardown finished its cleanup and went; the
		// others stay, released; no object carries a Teardown key.
		testenv.Eventually(t, 10*time.Second, "the object mid-teardown gone", testenv.Gone(k8s, mid))
		cms := &corev1.ConfigMapList{}
		if err := k8s.List(t.Context(), cms, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		kept := 0
		for _, cm := range cms.Items {
			if keys := teardownKeys(&cm); len(keys) > 0 {
				t.Errorf("%s still carries %v", cm.Name, keys)
			}
			if cm.Name == idle.Name || cm.Name == tenantCM.Name {
				kept++
			}
		}
		if kept != 2 {
			t.Errorf("%d of the 2 objects not being deleted are left, want both", kept)
		}
		// The CRDs stay: removing them is the next step, not uninstall's.
		for _, name := range []string{"teardownpolicies.teardown.dev", "clusterteardownpolicies.teardown.dev"} {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, crd); err != nil {
				t.Errorf("CRD %s: %v", name, err)
			}
		}
		// A second run finds nothing to do.
		var again testenv.SyncBuffer
		if err := uninstall.RunConfig(t.Context(), cfg, uninstall.Options{Timeout: 5 * time.Second, Out: &again}); err != nil {
			t.Fatalf("second run: %v", err)
		}
	})
}

func policySpec(app string, steps []teardownv1alpha1.Step) teardownv1alpha1.TeardownPolicySpec {
	return teardownv1alpha1.TeardownPolicySpec{
		Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
		Steps: steps,
	}
}

func configMap(ns, name, app string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}}}
}

// teardownKeys are the object's finalizers of Teardown policies.
func teardownKeys(obj client.Object) []string {
	var keys []string
	for _, f := range obj.GetFinalizers() {
		if strings.Contains(f, "teardown.dev/") {
			keys = append(keys, f)
		}
	}
	return keys
}

type cleanupServer struct {
	*httptest.Server
	caBundle []byte
}

// newCleanupServer serves a webhook step over HTTPS on 127.0.0.1.
func newCleanupServer(t *testing.T, answer func(w http.ResponseWriter)) *cleanupServer {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req steps.WebhookRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Listener = l
	s.StartTLS()
	t.Cleanup(s.Close)
	return &cleanupServer{Server: s, caBundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})}
}

func answerJSON(w http.ResponseWriter, resp steps.WebhookResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(resp)
}
