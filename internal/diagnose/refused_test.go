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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestRefusedObjects: an object a policy selects but could not guard (its
// status.refusedObjects) is explained as such, live, Terminating or gone,
// never as "nothing is blocked"; an entry about another object says nothing.
func TestRefusedObjects(t *testing.T) {
	const key = "teardown.dev/dns-records"
	policy := func(name, reason string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "teardown.dev/v1alpha1", "kind": "TeardownPolicy",
			"metadata": map[string]any{"name": "dns", "namespace": "shop"},
			"spec":     map[string]any{"finalizer": key, "steps": []any{map[string]any{"name": "remove-dns"}}},
			"status": map[string]any{"refused": int64(1), "refusedObjects": []any{map[string]any{
				"object":  map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": name},
				"reason":  reason,
				"message": "metadata.annotations: Too long: may not be more than 262144 bytes",
				"since":   testNow.Add(-time.Hour).Format(time.RFC3339),
			}}},
		}}
		return u
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "shop", UID: "cm-big"}}
	held := &corev1.ConfigMap{ObjectMeta: deleting("shop", "big", time.Hour, key)}
	controller := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "teardown-controller", Namespace: "teardown-system", Labels: map[string]string{"app.kubernetes.io/name": "teardown"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "ghcr.io/teardown-dev/teardown-controller:v0.1.0", Command: []string{"/teardown-controller"}}}}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	cases := map[string]struct {
		target  runtime.Object
		objs    []runtime.Object
		absent  bool
		cause   string // "" for none
		verdict string
		says    []string
	}{
		"selected, never guarded, live": {target: live, objs: []runtime.Object{ns, live, policy("big", "AttachRefused")},
			cause: CauseNotGuarded, says: []string{"TeardownPolicy shop/dns selects it but never guarded it", "Too long", "does not wait for steps remove-dns"}},
		"selected, never guarded, already gone": {target: live, objs: []runtime.Object{ns, policy("big", "AttachRefused")}, absent: true,
			cause: CauseNotGuarded, says: []string{"never guarded it"}},
		"held, its progress refused: stalled, and says what it could not read": {target: held, objs: []runtime.Object{ns, held, controller, policy("big", "ProgressRefused")},
			cause: CauseProgressNotRecorded, verdict: VerdictStalled, says: []string{"refuses the record of its progress", "status.blockedObjects cannot list it"}},
		"an entry about another object": {target: live, objs: []runtime.Object{ns, live, policy("small", "AttachRefused")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, f := fakeExplainer(t, testNow, tc.objs...)
			rep, err := e.Explain(context.Background(), fakeTarget(t, f.Mapper, tc.target))
			if tc.absent != apierrors.IsNotFound(err) || (err != nil && !tc.absent) {
				t.Fatalf("Explain: %v", err)
			}
			var got *Finding
			WalkFindings(rep.Findings, func(f *Finding) {
				if got == nil && (f.Cause == CauseNotGuarded || f.Cause == CauseProgressNotRecorded) {
					got = f
				}
			})
			var b strings.Builder
			RenderReport(&b, rep, Palette{})
			switch {
			case tc.cause == "" && got != nil:
				t.Fatalf("found %s about another object:\n%s", got.Cause, b.String())
			case tc.cause == "":
				return
			case got == nil || got.Cause != tc.cause:
				t.Fatalf("want %s:\n%s", tc.cause, b.String())
			}
			for _, s := range tc.says {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q, want it to say %q", got.Message, s)
				}
			}
			if got.Finalizer != key || got.Remedy == "" || strings.Contains(b.String(), "nothing is blocked") {
				t.Errorf("finalizer %q, remedy %q:\n%s", got.Finalizer, got.Remedy, b.String())
			}
			if tc.verdict != "" && (rep.Verdict != tc.verdict || !strings.Contains(strings.Join(rep.NotReadable, "\n"), "the progress of "+key)) {
				t.Errorf("verdict %q, not readable %q; want %q and the progress of %s\n%s", rep.Verdict, rep.NotReadable, tc.verdict, key, b.String())
			}
		})
	}
}
