/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// clusterResourceNamespace stands for the controller's namespace, where the
// signing Secrets of ClusterTeardownPolicies are (suite_test.go).
const clusterResourceNamespace = "teardown-system"

// TestWebhookSignedForClusterPolicy: a ClusterTeardownPolicy's webhook
// requests carry a Teardown-Signature made with the Secret its
// signingSecretRef names in the controller's namespace; the receiver
// verifies it and the object goes after its answer.
func TestWebhookSignedForClusterPolicy(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterResourceNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	secretValue := []byte("cluster-signing-secret-" + ns)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sig-" + ns, Namespace: clusterResourceNamespace},
		Data:       map[string][]byte{"hmac": secretValue},
	}
	create(t, secret)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })

	var mu sync.Mutex
	var verified, unverified int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := steps.VerifySignature(r.Header.Get(steps.SignatureHeader), secretValue, body, time.Now(), steps.SignatureTolerance) //nolint:staticcheck // the legacy header is still sent and must still verify
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			unverified++
			answerJSON(w, http.StatusUnauthorized, steps.WebhookResponse{Status: steps.WebhookFailure, Message: err.Error()})
			return
		}
		verified++
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + "/cleanup"
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "signed-" + ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "signed"),
				NamespaceSelector: selector("kubernetes.io/metadata.name", ns)}},
			Steps: []teardownv1alpha1.Step{{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{
				URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
				SigningSecretRef: &teardownv1alpha1.SecretKeyReference{Name: secret.Name, Key: "hmac"},
			}}},
		},
	}
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	mustBeReady(t, pol)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns, Labels: map[string]string{"app": "signed"}}}
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "the finalizer on the ConfigMap", hasFinalizer(cm, "teardown.dev/"+pol.Name))
	del(t, cm)
	testenv.Eventually(t, 20*time.Second, "the ConfigMap to be gone", testenv.Gone(k8s, cm))
	mu.Lock()
	defer mu.Unlock()
	// At least once: a step may be called again when its success was not
	// recorded before a retry (steps must be idempotent); every call signed.
	if verified < 1 || unverified != 0 {
		t.Errorf("the receiver verified %d requests and refused %d, want at least 1 and 0", verified, unverified)
	}
}
