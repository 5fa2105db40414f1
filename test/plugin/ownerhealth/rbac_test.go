/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// B4 tests the identity that removes the finalizer: Argo CD's API server
// (argocd-server, allowed to write Applications) added it, but the
// application controller removes it, and its ServiceAccount may not.
func TestExplainRBACOfTheRemover(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	argocd := plugintest.NewNamespace(t, cs, "argocd")
	system := "system-" + argocd
	readyNode(t, system)
	runningDeployment(t, argocd, "argocd-server", "argocd-server", system)
	plugintest.GrantClusterWide(t, cs, argocd, "argocd-server", "argoproj.io", "applications")
	runningStatefulSet(t, argocd, "argocd-application-controller", "argocd-application-controller")
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "billing", "namespace": argocd, "finalizers": []any{"resources-finalizer.argocd.argoproj.io/background"}},
		"spec":     map[string]any{"project": "default", "destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "billing"}},
	}}
	if _, err := dyn.Resource(gvrApplication).Namespace(argocd).Create(ctx, app, metav1.CreateOptions{FieldManager: "argocd-server"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvrApplication).Namespace(argocd).Patch(context.Background(), "billing", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := dyn.Resource(gvrApplication).Namespace(argocd).Delete(ctx, "billing", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	target := []string{"application.argoproj.io/billing", "-n", argocd}
	rep := explain(t, target...)
	blocked(t, rep, target...)
	f := root(t, rep, diagnose.CauseOwnerLacksRBAC, "billing")
	if f.Owner == nil || f.Owner.ServiceAccount != argocd+"/argocd-application-controller" || f.Owner.Workload == nil || f.Owner.Workload.Name != "argocd-application-controller" {
		t.Fatalf("B4 must test the application controller's ServiceAccount, not the manager that added the finalizer: %+v", f.Owner)
	}
	mustContain(t, "message", f.Message, "its ServiceAccount "+argocd+"/argocd-application-controller may not patch or update applications.argoproj.io "+argocd+"/billing")
}

// A missing permission does not switch the finalizer's own check off:
// Karpenter runs without the right to write Nodes, and the drain is
// refused by a budget; both are root blockers.
func TestExplainRBACBesideDrain(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ops := plugintest.NewNamespace(t, cs, "karpenter")
	system := "system-" + ops
	readyNode(t, system)
	runningDeployment(t, ops, "karpenter", "karpenter", system)
	ns := plugintest.NewNamespace(t, cs, "pdb")
	node := "drained-" + ns
	readyNode(t, node, "karpenter.sh/termination")
	runningPod(t, ns, "db-0", node, map[string]string{"app": "db"})
	budget(t, ns, "db", 1, 1)
	if err := cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	target := []string{"node/" + node}
	rep := explain(t, target...)
	blocked(t, rep, target...)
	b4 := root(t, rep, diagnose.CauseOwnerLacksRBAC, node)
	if b4.Owner == nil || b4.Owner.ServiceAccount != ops+"/karpenter" || b4.Owner.State != diagnose.OwnerAlive {
		t.Errorf("B4 owner = %+v", b4.Owner)
	}
	mustContain(t, "B4 message", b4.Message, "may not patch or update nodes "+node)
	mustContain(t, "B4 remedy", b4.Remedy, "kubectl create clusterrole karpenter-finalizers --verb=patch,update --resource=nodes")
	pdb := root(t, rep, diagnose.CauseDrainBlockedByPDB, "db")
	mustContain(t, "budget message", pdb.Message, "covers pod(s) db-0")
	if f := plugintest.Find(rep, diagnose.CauseNodeDrainBlocked, node); f == nil {
		t.Errorf("the drain check was switched off: %+v", rep.Findings)
	}
}
