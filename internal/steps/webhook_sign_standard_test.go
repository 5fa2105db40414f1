/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// headerReceiver records every request's headers and body, and answers
// each with the next of its answers (the last one repeats).
type headerReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	headers  []http.Header
	bodies   [][]byte
	answers  []string
	answered int
}

func newHeaderReceiver(t *testing.T, answers ...string) *headerReceiver {
	rc := &headerReceiver{answers: answers}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.headers = append(rc.headers, r.Header.Clone())
		rc.bodies = append(rc.bodies, body)
		answer := `{"status":"Success"}`
		if len(rc.answers) > 0 {
			answer = rc.answers[min(rc.answered, len(rc.answers)-1)]
		}
		rc.answered++
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *headerReceiver) request(t *testing.T, i int) (http.Header, []byte) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if i >= len(rc.headers) {
		t.Fatalf("the receiver got %d requests, want at least %d", len(rc.headers), i+1)
	}
	return rc.headers[i], rc.bodies[i]
}

// TestStandardWebhooksSignature: the controller's call verifies with the
// Standard Webhooks reference library (Go), for a secret in the whsec_ form
// (NewWebhook with the Secret's value) and for any other secret (NewWebhookRaw
// with its bytes); the Teardown-Signature is still sent and verifies as
// before. Negative controls: another secret, a changed body and a changed
// webhook-id are refused by the library.
func TestStandardWebhooksSignature(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	whsec := StandardSecretPrefix + base64.StdEncoding.EncodeToString(key)
	for _, tc := range []struct {
		name     string
		stored   string // the Secret's value
		receiver func() (*standardwebhooks.Webhook, error)
	}{
		{name: "whsec_ secret", stored: whsec, receiver: func() (*standardwebhooks.Webhook, error) { return standardwebhooks.NewWebhook(whsec) }},
		{name: "whsec_ secret made from a file (trailing newline)", stored: whsec + "\n", receiver: func() (*standardwebhooks.Webhook, error) { return standardwebhooks.NewWebhook(whsec) }},
		{name: "raw secret", stored: secretValue, receiver: func() (*standardwebhooks.Webhook, error) { return standardwebhooks.NewWebhookRaw([]byte(secretValue)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newHeaderReceiver(t)
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(signingSecretObj("ns", "sig", "secret", tc.stored)).Build()
			// The library checks the timestamp against its own clock.
			r := &Runner{Client: c, Reader: c, HTTP: testClients(), Now: time.Now}
			pol, target := webhookTarget()
			step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{
				URL: ptr.To(rc.URL + "/"), SigningSecretRef: &teardownv1alpha1.SecretKeyReference{Name: "sig"}}}
			if out := r.webhook(t.Context(), pol, pol.Key, step, target); !out.done {
				t.Fatalf("outcome = %+v, want done", out)
			}
			h, body := rc.request(t, 0)
			wh, err := tc.receiver()
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(body, h); err != nil {
				t.Errorf("the Standard Webhooks library refuses the controller's call: %v (headers %v)", err, h)
			}
			if err := VerifySignature(h.Get(SignatureHeader), []byte(tc.stored), body, time.Now(), SignatureTolerance); err != nil {
				t.Errorf("%s no longer verifies: %v", SignatureHeader, err)
			}
			if got, want := h.Get(WebhookIDHeader), DeliveryID(pol, pol.Key, "notify", target); got != want {
				t.Errorf("webhook-id = %q, want %q", got, want)
			}

			// Negative controls.
			other, _ := standardwebhooks.NewWebhookRaw([]byte("another secret"))
			if err := other.Verify(body, h); err == nil {
				t.Error("another secret verifies the call")
			}
			if err := wh.Verify(append([]byte(nil), strings.Replace(string(body), `"cm"`, `"db"`, 1)...), h); err == nil {
				t.Error("a changed body verifies")
			}
			changed := h.Clone()
			changed.Set(WebhookIDHeader, "td_other")
			if err := wh.Verify(body, changed); err == nil {
				t.Error("a changed webhook-id verifies")
			}
		})
	}
}

// TestStandardSecretMalformed: a Secret that starts with whsec_ but is not
// base64 is a transient error naming the Secret and its key, never the
// value, and nothing is sent (a receiver built with NewWebhook would refuse
// every call).
func TestStandardSecretMalformed(t *testing.T) {
	rc := newHeaderReceiver(t)
	value := StandardSecretPrefix + "not*base64"
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(signingSecretObj("ns", "sig", "hmac", value)).Build()
	r := &Runner{Client: c, Reader: c, HTTP: testClients(), Now: time.Now}
	pol, target := webhookTarget()
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{
		URL: ptr.To(rc.URL + "/"), SigningSecretRef: &teardownv1alpha1.SecretKeyReference{Name: "sig", Key: "hmac"}}}
	out := r.webhook(t.Context(), pol, pol.Key, step, target)
	want := `signing Secret ns/sig key "hmac" starts with whsec_ but the rest is not standard base64`
	if out.err == nil || out.definitive || !strings.Contains(out.message, want) {
		t.Fatalf("outcome = %+v, want a transient error containing %q", out, want)
	}
	if strings.Contains(out.message, "not*base64") {
		t.Errorf("message %q shows the secret", out.message)
	}
	if rc.answered != 0 {
		t.Error("a request was sent")
	}
}

// TestDeliveryIDIsStableAcrossRetries: every call of one step for one object
// carries the same webhook-id (here an InProgress answer, then a 503, then
// Success), while Teardown-Delivery and webhook-timestamp are per call; any
// other object, step, finalizer key, version of the steps or policy gets
// another id.
func TestDeliveryIDIsStableAcrossRetries(t *testing.T) {
	rc := newHeaderReceiver(t, `{"status":"InProgress"}`, `{"status":"InProgress","retryAfterSeconds":1}`, `{"status":"Success"}`)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	r := &Runner{HTTP: testClients(), Now: func() time.Time { now = now.Add(time.Second); return now }}
	pol, target := webhookTarget()
	pol.UID, pol.Fingerprint = "pol-uid", "f1"
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To(rc.URL + "/")}}
	for range 3 {
		_ = r.webhook(t.Context(), pol, pol.Key, step, target)
	}
	ids, deliveries, timestamps := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range 3 {
		h, _ := rc.request(t, i)
		ids[h.Get(WebhookIDHeader)] = true
		deliveries[h.Get(DeliveryHeader)] = true
		timestamps[h.Get(WebhookTimestampHeader)] = true
		if h.Get(WebhookSignatureHeader) != "" || h.Get(SignatureHeader) != "" {
			t.Errorf("an unsigned step's call carries a signature: %v", h)
		}
	}
	if len(ids) != 1 || len(deliveries) != 3 || len(timestamps) != 3 {
		t.Errorf("3 calls carried %d webhook-ids, %d Teardown-Delivery ids and %d timestamps, want 1, 3 and 3", len(ids), len(deliveries), len(timestamps))
	}

	base := DeliveryID(pol, pol.Key, "notify", target)
	other := func(edit func(p *policy.Policy, obj *corev1.ConfigMap) (string, string)) string {
		p := *pol
		obj := target.Obj.(*corev1.ConfigMap).DeepCopy()
		key, step := edit(&p, obj)
		return DeliveryID(&p, key, step, Object{GVK: target.GVK, Obj: obj})
	}
	for name, id := range map[string]string{
		"another object": other(func(p *policy.Policy, o *corev1.ConfigMap) (string, string) { o.UID = "u2"; return p.Key, "notify" }),
		"the same name, recreated": other(func(p *policy.Policy, o *corev1.ConfigMap) (string, string) {
			o.ObjectMeta = metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u1-again"}
			return p.Key, "notify"
		}),
		"another step":          other(func(p *policy.Policy, _ *corev1.ConfigMap) (string, string) { return p.Key, "notify-2" }),
		"another finalizer key": other(func(p *policy.Policy, _ *corev1.ConfigMap) (string, string) { return "x.io/z", "notify" }),
		"edited steps": other(func(p *policy.Policy, _ *corev1.ConfigMap) (string, string) {
			p.Fingerprint = "f2"
			return p.Key, "notify"
		}),
		"a recreated policy": other(func(p *policy.Policy, _ *corev1.ConfigMap) (string, string) {
			p.UID = "pol-uid-2"
			return p.Key, "notify"
		}),
	} {
		if id == base {
			t.Errorf("%s: the same webhook-id %q", name, id)
		}
	}
	if !strings.HasPrefix(base, "td_") || len(base) != 3+32 {
		t.Errorf("webhook-id %q, want td_ and 32 hex digits", base)
	}
}

// TestStandardKey: which key the webhook-signature is made with.
func TestStandardKey(t *testing.T) {
	for _, tc := range []struct {
		stored, want string
		wantErr      bool
	}{
		{stored: "plain", want: "plain"},
		{stored: " plain\n", want: " plain\n"}, // as stored, as the Teardown-Signature
		{stored: "whsec_" + base64.StdEncoding.EncodeToString([]byte("k")), want: "k"},
		{stored: "whsec_" + base64.StdEncoding.EncodeToString([]byte("k")) + "\n", want: "k"},
		{stored: "whsec_a2V5", want: "key"},
		{stored: "whsec_a2V5Cg", wantErr: true}, // unpadded: the libraries refuse it too
		{stored: "whsec_", wantErr: true},
		{stored: "whsec_!!", wantErr: true},
	} {
		got, err := StandardKey([]byte(tc.stored))
		if (err != nil) != tc.wantErr || string(got) != tc.want {
			t.Errorf("StandardKey(%q) = %q, %v; want %q, error %v", tc.stored, got, err, tc.want, tc.wantErr)
		}
	}
}
