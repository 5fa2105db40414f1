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

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// Family 5, "why did it vanish": a ConfigMap whose ownerReference names an
// owner in another namespace. The real garbage collector records
// OwnerRefInvalidNamespace on it and deletes it; explain on the absent
// ConfigMap finds that Event and says so, exiting 1 as for any object not
// found (docs/cli.md). Then an object whose namespace was deleted.
func TestExplainVanished(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	home, elsewhere := plugintest.NewNamespace(t, cs, "web"), plugintest.NewNamespace(t, cs, "platform")
	owner, err := cs.CoreV1().ConfigMaps(elsewhere).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frontend"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frontend-config", Namespace: home,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "frontend", UID: owner.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps(home).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "the garbage collector to delete the ConfigMap", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(home).Get(ctx, "frontend-config", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	rep := explain(t, plugin.ExitError, "configmap/frontend-config", "-n", home)
	if !rep.Absent || rep.Blocked || rep.Terminating {
		t.Errorf("absent %v, blocked %v, terminating %v", rep.Absent, rep.Blocked, rep.Terminating)
	}
	f := plugintest.Find(rep, diagnose.CauseCrossNamespaceOwnerReference, "frontend-config")
	if f == nil || f.Catalog != "E4" {
		t.Fatalf("no E4 finding from the garbage collector's Event:\n%s", plugintest.Dump(rep))
	}
	for _, want := range []string{"the garbage collector deleted it", "(that owner lives in namespace " + elsewhere + ")", "Warning Event OwnerRefInvalidNamespace from garbage-collector-controller", string(owner.UID)} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	if !strings.Contains(f.Remedy, "owner references cannot cross namespaces") {
		t.Errorf("remedy %q", f.Remedy)
	}
	r := text(t, "explain-vanished.txt", "explain", "configmap/frontend-config", "-n", home)
	if r.Code != plugin.ExitError || !strings.Contains(r.Out, "does not exist") || !strings.Contains(r.Err, "not found") {
		t.Errorf("text: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}

	// Its namespace went, and everything in it.
	gone := plugintest.NewNamespace(t, cs, "gone")
	if _, err := cs.CoreV1().ConfigMaps(gone).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "note"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "the namespace to go", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, gone, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	rep = explain(t, plugin.ExitError, "configmap/note", "-n", gone)
	if f := plugintest.Find(rep, diagnose.CauseNamespaceDeleted, gone); f == nil || !rep.Absent {
		t.Errorf("no NamespaceDeleted finding:\n%s", plugintest.Dump(rep))
	}
	// Nothing at all is known of a name that never existed.
	rep = explain(t, plugin.ExitError, "configmap/never-was", "-n", home)
	if f := plugintest.Find(rep, diagnose.CauseNoTrace, "never-was"); f == nil {
		t.Errorf("no NoTrace finding:\n%s", plugintest.Dump(rep))
	}
}
