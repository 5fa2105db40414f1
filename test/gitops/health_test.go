/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package gitops proves that GitOps tools read a policy's health as its
// state is: kstatus (what Flux's health checks and kubectl wait use) and the
// Argo CD health script config/gitops/argocd-health.lua, run here by a Lua
// interpreter, against real policies a running controller judged.
package gitops

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var k8s client.Client

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{TeardownCRDs: true}, func(e *testenv.Env) {
		scheme, err := controller.NewScheme()
		if err != nil {
			panic(err)
		}
		cfg := e.PollingConfig()
		if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
		opts := controller.ManagerOptions{Controller: controller.DefaultOptions()}
		opts.Controller.StatusInterval = time.Second
		mgr, err := controller.NewManager(cfg, opts)
		if err != nil {
			panic(err)
		}
		e.StartManager(mgr)
	})
}

// health is what each tool says of a policy.
type health struct {
	kstatus status.Status
	argo    string
}

// judge reads obj as the API server serves it and asks both tools.
func judge(t *testing.T, ctx context.Context, obj client.Object) (health, *unstructured.Unstructured) {
	t.Helper()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	return health{kstatus: res.Status, argo: argoHealth(t, u.Object)}, u
}

// argoHealth runs the shipped script as Argo CD does: obj is a global
// table, and the script returns {status, message}.
func argoHealth(t *testing.T, obj map[string]any) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "config", "gitops", "argocd-health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", toLua(t, L, obj))
	if err := L.DoString(string(script)); err != nil {
		t.Fatalf("argocd-health.lua: %v", err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("argocd-health.lua returned %v, want a table", L.Get(-1))
	}
	return ret.RawGetString("status").String() + ": " + ret.RawGetString("message").String()
}

// toLua converts JSON-shaped Go values into Lua values, as Argo CD does.
func toLua(t *testing.T, L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		tbl := L.NewTable()
		for k, e := range v {
			tbl.RawSetString(k, toLua(t, L, e))
		}
		return tbl
	case []any:
		tbl := L.NewTable()
		for _, e := range v {
			tbl.Append(toLua(t, L, e))
		}
		return tbl
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	t.Fatalf("no Lua value for %T", v)
	return lua.LNil
}

// eventually waits until obj's health is want, and fails with the last.
func eventually(t *testing.T, obj client.Object, kstatus status.Status, argo string) {
	t.Helper()
	var last health
	var lastObj *unstructured.Unstructured
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		last, lastObj = judge(t, t.Context(), obj)
		if last.kstatus == kstatus && len(last.argo) >= len(argo) && last.argo[:len(argo)] == argo {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	conds, _, _ := unstructured.NestedSlice(lastObj.Object, "status", "conditions")
	t.Fatalf("%s %s: kstatus %s, Argo CD %q; want %s and %q (conditions %v)", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(),
		last.kstatus, last.argo, kstatus, argo, conds)
}

func selector(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

// forever is a wait step that never finishes.
func forever() teardownv1alpha1.Step {
	return teardownv1alpha1.Step{Name: "forever", Wait: &teardownv1alpha1.WaitAction{
		Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret", Selector: selector("never", "matches")}},
		Condition: "size(objects) > 0",
	}}
}

// TestPolicyHealth: a policy in each state reads right to kstatus and to
// Argo CD: serving is Current and Healthy; refused (an unknown kind) and
// conflicting (a key another policy owns) are Failed and Degraded, not
// in progress forever; an edit not yet judged is not Current; a deleted
// policy finishing its teardowns is Terminating and Progressing.
func TestPolicyHealth(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	policy := func(name string, targets []teardownv1alpha1.Target, key string) *teardownv1alpha1.ClusterTeardownPolicy {
		p := &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key, Targets: targets, Steps: []teardownv1alpha1.Step{forever()}}}
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = k8s.Delete(context.Background(), p)
		})
		return p
	}
	configMaps := []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "gitops")}}

	serving := policy("gitops-serving", configMaps, "gitops.example.com/cleanup")
	eventually(t, serving, status.CurrentStatus, "Healthy")

	refused := policy("gitops-refused", []teardownv1alpha1.Target{{APIVersion: "example.com/v1", Kind: "Nope", Selector: selector("app", "gitops")}}, "")
	eventually(t, refused, status.FailedStatus, "Degraded: UnknownKind")

	conflicting := policy("gitops-conflicting", configMaps, "gitops.example.com/cleanup")
	eventually(t, conflicting, status.FailedStatus, "Degraded: FinalizerConflict")

	// Fixed by an edit: the refused policy becomes Current and Healthy.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(refused), refused); err != nil {
		t.Fatal(err)
	}
	refused.Spec.Targets = []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "gitops-other")}}
	if err := k8s.Update(ctx, refused); err != nil {
		t.Fatal(err)
	}
	eventually(t, refused, status.CurrentStatus, "Healthy")

	// Deleted while a teardown it started runs: Terminating, Progressing.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gitops-guarded", Namespace: "default", Labels: map[string]string{"app": "gitops"}}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the ConfigMap guarded", func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			return false, err
		}
		return len(cm.Finalizers) > 0, nil
	})
	if err := k8s.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, serving); err != nil {
		t.Fatal(err)
	}
	eventually(t, serving, status.TerminatingStatus, "Progressing: deleted")
	// Both read the deletionTimestamp; the controller then says why it stays.
	testenv.Eventually(t, 30*time.Second, "Reconciling=True (Deleting) on the deleted policy", func(ctx context.Context) (bool, error) {
		_, u := judge(t, ctx, serving)
		c := findCondition(u, teardownv1alpha1.ReconcilingCondition)
		return c != nil && c["status"] == "True" && c["reason"] == teardownv1alpha1.DeletingReason, nil
	})
	if h, _ := judge(t, ctx, serving); h.kstatus != status.TerminatingStatus || h.argo[:len("Progressing")] != "Progressing" {
		t.Errorf("a deleted policy finishing its teardowns reads %s and %q", h.kstatus, h.argo)
	}
	// Let it go: the ConfigMap's teardown is released by hand for the test's
	// cleanup (the policy's wait never ends).
	t.Cleanup(func() {
		_ = k8s.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)
		cm.Finalizers = nil
		_ = k8s.Update(context.Background(), cm)
	})
}

func findCondition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}
