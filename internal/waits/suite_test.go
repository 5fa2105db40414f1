/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package waits_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/bench/apimetrics"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// One control plane serves the suite; each test runs its own
// teardown-controller process (cmd/teardown-controller, so the flag is the
// real one) as a user with the rights below.
var (
	env        *testenv.Env
	k8s        client.Client
	controlCfg *rest.Config
)

// controllerUser is the identity the controller runs as: what the shipped
// RBAC gives it for ConfigMaps and pods, and Secrets it may read and delete
// but not watch, so a wait on Secrets must poll.
const controllerUser = "waits-controller"

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{TeardownCRDs: true}, func(e *testenv.Env) {
		env = e
		scheme, err := controller.NewScheme()
		if err != nil {
			panic(err)
		}
		if k8s, err = client.New(e.PollingConfig(), client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
		if err := grantController(); err != nil {
			panic(err)
		}
		if controlCfg, err = e.AddUser(controllerUser); err != nil {
			panic(err)
		}
	})
}

func grantController() error {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: controllerUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"teardown.dev"}, Resources: []string{"*"}, Verbs: all},
			{APIGroups: []string{""}, Resources: []string{"configmaps", "pods", "namespaces"}, Verbs: all},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: all},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: controllerUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: controllerUser},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllerUser}},
	}
	ctx := context.Background()
	if err := k8s.Create(ctx, role); err != nil {
		return err
	}
	return k8s.Create(ctx, binding)
}

var controllers atomic.Int32

// running is a teardown-controller process and its metrics endpoint.
type running struct {
	*procctl.Controller
	metrics string
}

// startController runs cmd/teardown-controller with --event-driven-waits
// as given, until the test ends.
func startController(t *testing.T, eventDriven bool) *running {
	t.Helper()
	port, err := procctl.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("waits-%d", controllers.Add(1))
	c, err := procctl.New(procctl.Options{
		Name: name, Dir: filepath.Join(env.Dir, "controllers"), Config: controlCfg,
		Args: []string{
			"--event-driven-waits=" + strconv.FormatBool(eventDriven),
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false",
			"--zap-log-level=1",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(15 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(c.LogTail(60))
		}
	})
	return &running{Controller: c, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}
}

// metric sums a metric of the controller's /metrics over the series that
// carry the given labels.
func (r *running) metric(ctx context.Context, name string, labels map[string]string) (float64, error) {
	return apimetrics.SumAt(ctx, r.metrics, name, labels)
}

func (r *running) mustMetric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, err := r.metric(t.Context(), name, labels)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return v
}

// clusterPolicy creates a ClusterTeardownPolicy guarding the ConfigMaps
// labelled waits-test=<its name> with the given steps, and waits until the
// controller serves it.
func clusterPolicy(t *testing.T, name string, steps ...teardownv1alpha1.Step) *teardownv1alpha1.ClusterTeardownPolicy {
	t.Helper()
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: "waits.example.com/" + name,
			Attach:    teardownv1alpha1.AttachAutomatic,
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"waits-test": name}}}},
			Steps: steps,
		},
	}
	if err := k8s.Create(t.Context(), pol); err != nil {
		t.Fatalf("creating policy %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	return pol
}

func selector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func pod(ns, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		// Never scheduled (no scheduler, no kubelet): deleted at once.
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
}
