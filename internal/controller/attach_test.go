/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestAttachAtCreate: with the admission webhook, an object carries its
// policy's finalizer in the very answer to its CREATE, so even one deleted
// at once is cleaned up.
func TestAttachAtCreate(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	srv := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	})
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "early", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("early", "yes")}},
			Steps:   []teardownv1alpha1.Step{srv.webhookStep("deregister")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	// A TeardownPolicy's kinds go to the namespaced webhook, limited to the
	// namespaces that have one; the cluster-wide webhook gets no rule from
	// it.
	testenv.Eventually(t, 20*time.Second, "the namespaced webhook's rules to cover ConfigMaps in "+ns, func(ctx context.Context) (bool, error) {
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: attachWebhookConfiguration}, mwc); err != nil {
			return false, err
		}
		configMaps := func(r admissionregistrationv1.RuleWithOperations) bool {
			return slices.Contains(r.Resources, "configmaps")
		}
		cluster, namespaced := mwc.Webhooks[0], mwc.Webhooks[1]
		if !slices.ContainsFunc(namespaced.Rules, configMaps) {
			return false, nil
		}
		if slices.ContainsFunc(cluster.Rules, configMaps) {
			t.Fatalf("a TeardownPolicy put a cluster-wide rule on %s: %+v", cluster.Name, cluster.Rules)
		}
		// The installer's exclusions (never kube-system) stay, and the
		// controller's own requirement names the policies' namespaces.
		sel := namespaced.NamespaceSelector
		if sel == nil || len(sel.MatchExpressions) != 2 || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn ||
			sel.MatchExpressions[1].Operator != metav1.LabelSelectorOpIn || !slices.Contains(sel.MatchExpressions[1].Values, ns) {
			t.Fatalf("namespaceSelector of %s = %+v, want the installer's NotIn and In (%s, ...)", namespaced.Name, sel, ns)
		}
		return true, nil
	})

	key := ns + ".teardown.dev/early"
	cm := labelled(ns, "short-lived", "early", "yes")
	create(t, cm) // cm now holds the API server's answer
	if !slices.Contains(cm.Finalizers, key) {
		t.Fatalf("finalizers in the CREATE answer = %v, want %s put there by the webhook", cm.Finalizers, key)
	}
	del(t, cm)
	testenv.Eventually(t, 20*time.Second, "the object to be gone", testenv.Gone(k8s, cm))
	// At least once: a step may be called again when its success was not
	// recorded before a retry (steps must be idempotent).
	if n := len(srv.calls()); n < 1 {
		t.Errorf("cleanup ran %d times for an object deleted right after its creation, want at least 1", n)
	}

	// Unmatched objects are left alone.
	other := labelled(ns, "unmatched", "early", "no")
	create(t, other)
	if len(other.Finalizers) != 0 {
		t.Errorf("an unmatched object got finalizers %v at create", other.Finalizers)
	}
}
