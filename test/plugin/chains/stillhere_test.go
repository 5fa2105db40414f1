/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chains

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// Family 5, "why is it still here": a ConfigMap that is not being deleted,
// whose owner was deleted (background propagation) but is held by a
// finalizer nobody owns. The garbage collector deletes the dependent only
// once the owner is gone, so explain on the dependent must say it is not
// being deleted, that its owner is, and why the owner is held (B5), and
// exit 3. Releasing the owner's finalizer, the remedy, lets the real
// garbage collector delete both.
func TestExplainStillHereBecauseOwnerHeld(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ns := plugintest.NewNamespace(t, cs, "shop")
	owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-config", Finalizers: []string{"shop.teardown.test/backup"}}},
		metav1.CreateOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plugintest.DropFinalizers(cs, ns, "shop-config") })
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-cache", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "shop-config", UID: owner.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "shop-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := explain(t, plugin.ExitBlocked, "configmap/shop-cache", "-n", ns)
	if rep.Terminating || !rep.Blocked {
		t.Errorf("terminating %v, blocked %v", rep.Terminating, rep.Blocked)
	}
	top := plugintest.Find(rep, diagnose.CauseNotTerminating, "shop-cache")
	held := plugintest.Find(rep, diagnose.CauseOwnerBeingDeleted, "shop-config")
	if top == nil || held == nil || !strings.Contains(top.Message, "is not being deleted itself; 1 of its owners are") {
		t.Fatalf("no NotTerminating → OwnerBeingDeleted chain:\n%s", plugintest.Dump(rep))
	}
	if !strings.Contains(held.Message, "held by finalizers [shop.teardown.test/backup]: the garbage collector deletes this object only once the owner is gone") {
		t.Errorf("owner finding: %q", held.Message)
	}
	r := plugintest.Root(rep, diagnose.CauseOrphanFinalizer, "shop-config")
	if r == nil || len(rep.RootBlockers) != 1 || r.Finalizer != "shop.teardown.test/backup" {
		t.Fatalf("root blockers = %+v, want the owner's orphan finalizer", rep.RootBlockers)
	}
	text(t, "explain-still-here.txt", "explain", "configmap/shop-cache", "-n", ns)

	// The remedy: release the owner's finalizer; the garbage collector
	// then deletes the dependent.
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "shop-config", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "the garbage collector to delete the dependent", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "shop-cache", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	_ = corev1.ConfigMap{}
}
