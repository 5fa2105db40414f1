/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestExplainSaysWaitCycle: an object whose policy's status.blockedObjects
// says its cleanup waits in a cycle (diagnosis WaitCycle) is BLOCKED by that
// cycle, the objects, policies and steps named, not STALLED; an entry of
// another cause, or about another object, adds nothing.
func TestExplainSaysWaitCycle(t *testing.T) {
	const key = "teardown.dev/drain"
	cycle := "ConfigMap shop/a: teardown.dev/drain: the cleanup of ConfigMap shop/a (step drain of TeardownPolicy shop/drain) waits on it, and its own cleanup (step wait-a of TeardownPolicy shop/gate) waits on ConfigMap shop/a: the cleanups wait on each other and none can finish; change the steps of one of these policies so that they do not"
	policy := func(object, cause string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "teardown.dev/v1alpha1", "kind": "TeardownPolicy",
			"metadata": map[string]any{"name": "drain", "namespace": "shop"},
			"spec":     map[string]any{"finalizer": key, "steps": []any{map[string]any{"name": "drain"}}},
			"status": map[string]any{"blocked": int64(1), "blockedObjects": []any{map[string]any{
				"object": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": object},
				"step":   "drain", "reason": "StepInProgress", "message": "step drain: waiting for 1 object(s) to be gone: ConfigMap shop/b",
				"since": testNow.Add(-time.Hour).Format(time.RFC3339),
				"diagnosis": map[string]any{"cause": cause, "message": cycle, "since": testNow.Add(-50 * time.Minute).Format(time.RFC3339),
					"blocker": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "b"}},
			}}},
		}}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	held := &corev1.ConfigMap{ObjectMeta: deleting("shop", "a", time.Hour, key)}
	controller := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "teardown-controller", Namespace: "teardown-system", Labels: map[string]string{"app.kubernetes.io/name": "teardown"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "ghcr.io/teardown-dev/teardown-controller:v0.1.0", Command: []string{"/teardown-controller"}}}}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	cases := map[string]struct {
		objs  []runtime.Object
		cycle bool
	}{
		"the policy says a wait cycle": {objs: []runtime.Object{ns, held, controller, policy("a", CauseWaitCycle)}, cycle: true},
		"another cause":                {objs: []runtime.Object{ns, held, controller, policy("a", "NotDeleted")}},
		"a cycle of another object":    {objs: []runtime.Object{ns, held, controller, policy("c", CauseWaitCycle)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, f := fakeExplainer(t, testNow, tc.objs...)
			rep, err := e.Explain(context.Background(), fakeTarget(t, f.Mapper, held))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			RenderReport(&b, rep, Palette{})
			first := ""
			if len(rep.RootBlockers) > 0 {
				first = rep.RootBlockers[0].Cause
			}
			if !tc.cycle {
				if strings.Contains(b.String(), CauseWaitCycle) {
					t.Errorf("a cycle said:\n%s", b.String())
				}
				return
			}
			if rep.Verdict != VerdictBlocked || first != CauseWaitCycle {
				t.Fatalf("verdict %s, first root %q; want Blocked by %s:\n%s", rep.Verdict, first, CauseWaitCycle, b.String())
			}
			r := rep.RootBlockers[0]
			for _, s := range []string{"TeardownPolicy shop/drain says its step drain waits in a cycle", "step wait-a of TeardownPolicy shop/gate", "found 50m ago"} {
				if !strings.Contains(r.Message, s) {
					t.Errorf("message %q, want it to say %q", r.Message, s)
				}
			}
			if r.Object == nil || r.Object.String() != "ConfigMap shop/b" || r.Finalizer != key || r.Remedy == "" {
				t.Errorf("root %+v, want ConfigMap shop/b, %s, a remedy", r, key)
			}
		})
	}
}
