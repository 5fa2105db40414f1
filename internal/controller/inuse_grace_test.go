/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// slowAdmission is another validating webhook on pods, as a cluster may
// run (a policy engine): the API server calls it beside the in-use
// webhook and stores the pod only when both answered. It holds each pod
// whose name starts with "slow-" until told to let it through.
type slowAdmission struct {
	received chan string
	release  chan struct{}
}

func newSlowAdmission(t *testing.T, ns string) *slowAdmission {
	t.Helper()
	s := &slowAdmission{received: make(chan string, 1), release: make(chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		pod := &corev1.Pod{}
		_ = json.Unmarshal(review.Request.Object.Raw, pod)
		if strings.HasPrefix(pod.Name, "slow-") {
			s.received <- pod.Name
			select {
			case <-s.release:
			case <-time.After(4 * time.Second):
			}
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + "/validate"
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "slow-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "slow.test.teardown.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:     &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](10),
		}},
	}
	create(t, vwc)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), vwc) })
	testenv.Eventually(t, 20*time.Second, "the API server to call the slow webhook", func(ctx context.Context) (bool, error) {
		done := make(chan error, 1)
		go func() {
			done <- k8s.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "slow-probe", Namespace: ns},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c:1"}}}}, client.DryRunAll)
		}()
		select {
		case <-s.received:
			s.release <- struct{}{}
			return true, <-done
		case err := <-done:
			return false, err
		}
	})
	return s
}

// TestUnusedGraceCoversSlowAdmission: a pod admitted while its Secret was
// alive (checked by the in-use webhook before the deletion, or not asked
// about because the namespace was not yet in the webhook's configuration),
// whose storing another validating webhook holds back until after the
// deletion, is still seen by the unused step: the step confirms no sooner
// than the grace after the deletion and after the namespace's coverage.
// Without the grace, the Secret went before the pod was stored, although
// the pod was admitted as a user of a live Secret.
func TestUnusedGraceCoversSlowAdmission(t *testing.T) {
	testenv.SkipShort(t)
	if inUseOff {
		t.Skip("the suite runs without the in-use webhook (TEARDOWN_TEST_INUSE_WEBHOOK=off)")
	}
	// The other webhook lets the pod through this long after the
	// deletion: within the suite's grace of a second.
	const latency = 500 * time.Millisecond
	ns := testenv.NewNamespace(t, k8s)
	app := "slow-" + ns
	labels := map[string]string{"app": app}
	pol := serveUnusedPolicy(t, "slow-"+ns, teardownv1alpha1.Target{APIVersion: "v1", Kind: "Secret", Selector: selector("app", app)})
	key := "teardown.dev/" + pol.Name
	slow := newSlowAdmission(t, ns)
	deletions := watchDeletions(t, ns)

	conclusive := 0
	for i := 0; conclusive < 3 && i < 20; i++ {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("creds-%d", i), Namespace: ns, Labels: labels}}
		create(t, secret)
		testenv.Eventually(t, 20*time.Second, "the finalizer on "+secret.Name, hasFinalizer(secret, key))
		pod := podUsingSecret(ns, fmt.Sprintf("slow-%d", i), secret.Name)
		created := make(chan error, 1)
		go func() { created <- k8s.Create(context.Background(), pod) }()
		// The API server called both webhooks at once; the in-use one
		// answers at once, the slow one waits for the deletion.
		<-slow.received
		del(t, secret)
		time.AfterFunc(latency, func() { slow.release <- struct{}{} })
		err := <-created
		switch {
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), inUseRefusal(secret.Name)):
			// The in-use webhook read the Secret after the deletion: the
			// case TestInUseWebhookRefusesNewUses covers.
			goneWithin(t, 10*time.Second, secret.Name, secret)
			continue
		case err != nil:
			t.Fatalf("creating %s: %v", pod.Name, err)
		}
		// Admitted: the in-use webhook read the Secret before its
		// deletion. The pod must hold it.
		conclusive++
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if removed := deletions.revision(secret.Name); removed != 0 {
				t.Fatalf("round %d: %s went (revision %d) although pod %s (revision %s), admitted while it was alive, uses it",
					i, secret.Name, removed, pod.Name, pod.ResourceVersion)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("round %d: pod %s, admitted before the deletion and stored %s after it, holds %s", i, pod.Name, latency, secret.Name)
		del(t, pod)
		goneWithin(t, 10*time.Second, secret.Name+" after its pod", secret)
	}
	if conclusive == 0 {
		t.Fatal("the in-use webhook never answered before the deletion: no round tested the grace")
	}
}
