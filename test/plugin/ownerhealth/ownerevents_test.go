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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// warning records a Warning Event about obj from component, as
// client-go's event recorder writes it.
func warning(t *testing.T, obj corev1.ObjectReference, component, reason, message string, at time.Time) {
	t.Helper()
	ts := metav1.NewTime(at)
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: obj.Name + ".", Namespace: obj.Namespace},
		InvolvedObject: obj, Type: corev1.EventTypeWarning, Reason: reason, Message: message,
		Source: corev1.EventSource{Component: component}, FirstTimestamp: ts, LastTimestamp: ts, Count: 3}
	if _, err := cs.CoreV1().Events(obj.Namespace).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A running operator that reports its failing cleanup only in Warning
// Events about the object: explain names the newest of the owner's own
// Events as the cause, and not the garbage collector's newer one.
func TestExplainOwnerWarningEvent(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ops := plugintest.NewNamespace(t, cs, "ops")
	node := "node-" + ops
	readyNode(t, node)
	runningDeployment(t, ops, "bucket-operator", "bucket-operator", node)
	plugintest.GrantClusterWide(t, cs, ops, "bucket-operator", "", "configmaps")
	ns := plugintest.NewNamespace(t, cs, "shop")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bucket", Namespace: ns, Finalizers: []string{"buckets.example.com/cleanup"}}}
	got, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "bucket-operator"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "bucket", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "bucket", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	target := []string{"configmap/bucket", "-n", ns}
	if rep := explain(t, target...); rep.Blocked || plugintest.Find(rep, diagnose.CauseCleanupInProgress, "bucket") == nil {
		t.Fatalf("before the owner says anything, want cleanup in progress: %+v", rep.Findings)
	}

	ref := corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "bucket", UID: got.UID}
	now := time.Now()
	warning(t, ref, "bucket-operator", "CleanupFailed", "old failure", now.Add(-time.Hour))
	warning(t, ref, "bucket-operator", "CleanupFailed", "deleting bucket s3://shop-assets: AccessDenied: not authorized to perform s3:DeleteBucket", now.Add(-time.Minute))
	warning(t, ref, "garbage-collector-controller", "OwnerRefInvalidNamespace", "ownerRef [v1/ConfigMap, namespace: x, name: y, uid: z] does not exist in namespace", now)

	rep := explain(t, target...)
	blocked(t, rep, target...)
	f := root(t, rep, diagnose.CauseOwnerReportsFailure, "bucket")
	mustContain(t, "message", f.Message, "the owner says: event CleanupFailed (bucket-operator, ×3): deleting bucket s3://shop-assets: AccessDenied", "bucket-operator owns \"buckets.example.com/cleanup\" and is running")
	if strings.Contains(f.Message, "OwnerRefInvalidNamespace") || strings.Contains(f.Message, "old failure") {
		t.Errorf("not the owner's newest word: %s", f.Message)
	}
}
