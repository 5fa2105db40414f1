/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package nonscontroller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	kubeconfig string
	cs         kubernetes.Interface
)

// TestMain starts a control plane whose kube-controller-manager runs the
// garbage collector only: nothing acts on a namespace's deletion.
func TestMain(m *testing.M) {
	plugintest.Main(m, testenv.Options{Controllers: []string{"garbagecollector"}}, func(e *testenv.Env) {
		kubeconfig = e.Kubeconfig
		cs = kubernetes.NewForConfigOrDie(e.Config)
	})
}

// run runs kubectl-teardown against this control plane.
func run(args ...string) plugintest.Result {
	return plugintest.Run(plugin.Execute, kubeconfig, args...)
}

func explain(t *testing.T, ns string) (*diagnose.Report, int) {
	t.Helper()
	r := run("explain", "namespace/"+ns, "-o", "json")
	if r.Code != plugin.ExitOK && r.Code != plugin.ExitBlocked {
		t.Fatalf("explain: exit %d: %s", r.Code, r.Err)
	}
	return plugintest.DecodeReport(t, r), r.Code
}

// A11: with no namespace controller, a deleted namespace never gets a
// condition. explain waits a minute (the controller's first pass takes
// seconds) and then names the missing controller as the root blocker, and
// status says so too.
func TestExplainNamespaceControllerNotRunning(t *testing.T) {
	plugintest.NeedCluster(t, cs)
	ctx := t.Context()
	ns := "abandoned"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Inside the first minute it may still be the controller's first pass.
	rep, code := explain(t, ns)
	if f := plugintest.Find(rep, diagnose.CauseNamespaceControllerIdle, ""); f != nil || code != plugin.ExitOK {
		t.Errorf("A11 reported too early (exit %d): %+v", code, f)
	}

	deadline := time.Now().Add(100 * time.Second)
	var f *diagnose.Finding
	for f == nil {
		if time.Now().After(deadline) {
			t.Fatalf("explain never reported A11:\n%s", plugintest.Dump(rep))
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
		rep, code = explain(t, ns)
		f = plugintest.Find(rep, diagnose.CauseNamespaceControllerIdle, "")
	}
	if f.Catalog != "A11" || f.Severity != diagnose.SeverityBlocker || code != plugin.ExitBlocked {
		t.Errorf("A11 finding (exit %d): %+v", code, f)
	}
	if !strings.Contains(f.Message, "the namespace controller has written no condition") || !strings.Contains(f.Message, "--controllers") {
		t.Errorf("message = %q", f.Message)
	}
	if !strings.Contains(f.Remedy, "do not strip finalizers") || f.FixOwner != "cluster operator" || !strings.Contains(f.Leaks, "stripping the kubernetes token") {
		t.Errorf("remedy %q, fix owner %q, leaks %q", f.Remedy, f.FixOwner, f.Leaks)
	}
	roots := 0
	for _, r := range rep.RootBlockers {
		if r.Cause == diagnose.CauseNamespaceControllerIdle {
			roots++
		}
	}
	if roots != 1 {
		t.Errorf("root blockers = %+v", rep.RootBlockers)
	}

	r := run("status", "-A", "-o", "json")
	if r.Code != plugin.ExitOK {
		t.Fatalf("status: exit %d: %s", r.Code, r.Err)
	}
	st := &plugin.StatusReport{}
	if err := json.Unmarshal([]byte(r.Out), st); err != nil {
		t.Fatal(err)
	}
	blocker := ""
	for _, it := range st.Items {
		if it.Object.Kind == "Namespace" && it.Object.Name == ns {
			blocker = it.Blocker
		}
	}
	// Explain's root blocker, A11.
	if !strings.HasPrefix(blocker, "NamespaceControllerIdle [A11]: ") || !strings.Contains(blocker, "namespace controller is not running") {
		t.Errorf("status blocker of the namespace = %q", blocker)
	}

	// kube-controller-manager here runs without leader election, so it has
	// no Lease. A stale one, as a stopped kube-controller-manager leaves
	// behind, is enough to name it at once, without waiting a minute.
	renewed := metav1.NewMicroTime(time.Now().Add(-10 * time.Minute))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("master-0_0b7c"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &renewed}}
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := "just-deleted"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fresh}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, fresh, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, code = explain(t, fresh)
	f = plugintest.Find(rep, diagnose.CauseNamespaceControllerIdle, "")
	if f == nil || code != plugin.ExitBlocked || !strings.Contains(f.Message, "kube-controller-manager is not renewing its Lease: Lease kube-system/kube-controller-manager (holder \"master-0_0b7c\") was last renewed 10m ago, 9m45s past its 15s lease duration") {
		t.Errorf("a stale kube-controller-manager Lease is not reported at once (exit %d):\n%s", code, plugintest.Dump(rep))
	}
}
