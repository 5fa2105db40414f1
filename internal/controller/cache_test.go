/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestKubectlAppliedObjectsAreGuarded: the cache leaves out kubectl's
// last-applied-configuration annotation (a copy of the whole object), and
// must leave out nothing else a decision reads. Objects created before their
// policy (so the controller, not the admission webhook, attaches the key)
// with only that annotation, and with it and another one, are guarded, keep
// it on the server, their webhook gets their other annotations, and they go
// after the cleanup. (The cache must also keep an emptied annotation map
// empty, not absent: the attach patch tests absence, and a wrong test costs a
// refused patch and a re-read. TestCacheTransform checks that.)
func TestKubectlAppliedObjectsAreGuarded(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	srv := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	})
	applied := func(name string, annotations ...string) *corev1.ConfigMap {
		cm := labelled(ns, name, "app", "applied")
		cm.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"ConfigMap","data":{"password":"hunter2"}}`}
		for i := 0; i+1 < len(annotations); i += 2 {
			cm.Annotations[annotations[i]] = annotations[i+1]
		}
		cm.Data = map[string]string{"password": "hunter2"}
		return cm
	}
	only := applied("only-last-applied")
	owned := applied("owned", "team.example.com/owner", "payments")
	create(t, only)
	create(t, owned)

	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "applied", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "applied")}},
			Steps:   []teardownv1alpha1.Step{srv.webhookStep("deregister")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/applied"
	for _, cm := range []*corev1.ConfigMap{only, owned} {
		testenv.Eventually(t, 20*time.Second, cm.Name+" to carry "+key, hasFinalizer(cm, key))
		got := &corev1.ConfigMap{}
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; !ok || !finalizer.Attached(got, key) {
			t.Errorf("%s's annotations = %v, want kubectl's kept and the attached record added", cm.Name, got.Annotations)
		}
	}

	del(t, only)
	del(t, owned)
	testenv.Eventually(t, 20*time.Second, only.Name+" to be gone", testenv.Gone(k8s, only))
	testenv.Eventually(t, 20*time.Second, owned.Name+" to be gone", testenv.Gone(k8s, owned))
	seen := map[string]map[string]string{}
	for _, call := range srv.calls() {
		seen[call.Object.Name] = call.Object.Annotations
	}
	want := map[string]map[string]string{only.Name: nil, owned.Name: {"team.example.com/owner": "payments"}}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("annotations the webhook saw, per object (-want +got):\n%s", diff)
	}
}
