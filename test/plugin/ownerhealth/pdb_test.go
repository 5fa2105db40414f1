/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// budget creates a PodDisruptionBudget keeping minAvailable pods labelled
// app=app, and waits for the disruption controller to compute its status.
func budget(t *testing.T, ns, app string, minAvailable int32, wantHealthy int32) {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(minAvailable)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the disruption controller to compute PodDisruptionBudget "+app, func(ctx context.Context) (bool, error) {
		got, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.ObservedGeneration == got.Generation && got.Status.CurrentHealthy == wantHealthy && got.Status.DisruptionsAllowed == 0, nil
	})
}

// assertEvictionRefused checks that the API server itself refuses to evict
// the pod (what a drain sends), with 429.
func assertEvictionRefused(t *testing.T, ns, pod string) {
	t.Helper()
	err := cs.CoreV1().Pods(ns).EvictV1(t.Context(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}})
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting %s/%s: %v, want 429 Too Many Requests", ns, pod, err)
	}
}

// leaderLease creates a leader-election Lease renewed now.
func leaderLease(t *testing.T, ns, name, holder string) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](3600), RenewTime: &now}}
	if _, err := cs.CoordinationV1().Leases(ns).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// D5 for real: a Node Karpenter drains before terminating its instance,
// with a pod whose PodDisruptionBudget (its status computed by the
// disruption controller) allows no disruption, so the API server refuses
// the eviction with 429. explain names the budget, with the API server's
// own answer to a dry-run eviction, as the root blocker.
func TestExplainDrainRefusedByBudget(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ns := plugintest.NewNamespace(t, cs, "pdb")
	node := "drained-" + ns
	readyNode(t, node, "karpenter.sh/termination")
	runningPod(t, ns, "db-0", node, map[string]string{"app": "db"})
	budget(t, ns, "db", 1, 1)
	assertEvictionRefused(t, ns, "db-0")
	ops := plugintest.NewNamespace(t, cs, "karpenter")
	leaderLease(t, ops, "karpenter-leader-election", "karpenter-6d8f9c-x2k4q")
	if err := cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	target := []string{"node/" + node}
	rep := explain(t, target...)
	blocked(t, rep, target...)
	f := plugintest.Find(rep, diagnose.CauseNodeDrainBlocked, node)
	if f == nil || f.Owner == nil || f.Owner.Component != "Karpenter" || f.Owner.State != diagnose.OwnerAlive {
		t.Fatalf("no D5 with Karpenter alive: %+v", rep.Findings)
	}
	b := root(t, rep, diagnose.CauseDrainBlockedByPDB, "db")
	mustContain(t, "message", b.Message, "PodDisruptionBudget "+ns+"/db allows 0 disruptions (1 healthy, 1 required)",
		"the API server refuses their eviction (dry-run): db-0: Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget db needs 1 healthy pods and has 1 currently)",
		"The disruption budget db needs 1 healthy pods and has 1 currently")
	mustContain(t, "remedy", b.Remedy, "scale the workload up", "relax minAvailable/maxUnavailable")
	recordText(t, "explain-drain-pdb.txt", "explain", "node/"+node)
}

// The same refusal seen from the pod: kubectl drain cordons the node and
// evicts; a pod the budget protects is not going, and explain on the pod
// says why, with the API server's answer and the budget.
func TestExplainPodEvictionRefused(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ns := plugintest.NewNamespace(t, cs, "drain")
	node := "cordoned-" + ns
	readyNode(t, node)
	runningPod(t, ns, "db-0", node, map[string]string{"app": "db"})
	budget(t, ns, "db", 1, 1)
	target := []string{"pod/db-0", "-n", ns}
	if rep := explain(t, target...); rep.Blocked {
		t.Fatalf("a pod nobody drains is not blocked: %+v", rep.Findings)
	}

	// kubectl drain's first step (kubectl cordon).
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{FieldManager: "kubectl-cordon"}); err != nil {
		t.Fatal(err)
	}
	assertEvictionRefused(t, ns, "db-0")
	rep := explain(t, target...)
	blocked(t, rep, target...)
	f := root(t, rep, diagnose.CauseEvictionRefused, "db-0")
	mustContain(t, "message", f.Message, "its node "+node+" is cordoned (spec.unschedulable), and the API server refuses to evict the pod (dry-run): Cannot evict pod as it would violate the pod's disruption budget.",
		"PodDisruptionBudget "+ns+"/db allows 0 disruptions (1 healthy, 1 required)")
	mustContain(t, "remedy", f.Remedy, "scale the workload up", "relax the budget's minAvailable/maxUnavailable")
	recordText(t, "explain-eviction-refused.txt", "explain", "pod/db-0", "-n", ns)

	// A user who may only read cannot ask for a dry-run eviction: the
	// budget's status says it alone.
	r := plugintest.Run(plugin.Execute, plugintest.ReadOnlyKubeconfig(t, restConfig, cs, "ownerhealth-readonly"), append([]string{"explain", "-o", "json"}, target...)...)
	if r.Code != plugin.ExitBlocked || !strings.Contains(r.Out, diagnose.CauseEvictionRefused) ||
		!strings.Contains(r.Out, "a budget allows no disruption, so a drain cannot evict the pod (the eviction could not be asked as a dry-run)") {
		t.Errorf("read-only user: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
}
