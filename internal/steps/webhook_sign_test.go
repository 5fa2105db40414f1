/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

const secretValue = "s3cr3t-signing-value"

// signedReceiver records the headers and bodies it gets and answers Success.
type signedReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
}

type recordedRequest struct {
	signature, delivery string
	body                []byte
}

func newSignedReceiver(t *testing.T) *signedReceiver {
	rc := &signedReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.requests = append(rc.requests, recordedRequest{signature: r.Header.Get(SignatureHeader), delivery: r.Header.Get(DeliveryHeader), body: body})
		rc.mu.Unlock()
		_, _ = io.WriteString(w, `{"status":"Success"}`)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *signedReceiver) last(t *testing.T) recordedRequest {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.requests) == 0 {
		t.Fatal("the receiver was not called")
	}
	return rc.requests[len(rc.requests)-1]
}

func (rc *signedReceiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.requests)
}

func signingSecretObj(namespace, name, key, value string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{key: []byte(value)}}
}

func TestSignedWebhookRequests(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	namespaced := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p"}, Key: "x.io/y"}
	cluster := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "c"}, Key: "x.io/y"}
	_, target := webhookTarget()

	for _, tc := range []struct {
		name    string
		pol     *policy.Policy
		objs    []client.Object
		ref     *teardownv1alpha1.SecretKeyReference
		opts    WebhookOptions
		secret  string // the secret the request must be signed with
		wantErr string // a transient error, and no call
	}{
		{name: "TeardownPolicy, default key", pol: namespaced, objs: []client.Object{signingSecretObj("ns", "sig", "secret", secretValue)},
			ref: &teardownv1alpha1.SecretKeyReference{Name: "sig"}, secret: secretValue},
		{name: "TeardownPolicy, named key", pol: namespaced, objs: []client.Object{signingSecretObj("ns", "sig", "hmac", secretValue)},
			ref: &teardownv1alpha1.SecretKeyReference{Name: "sig", Key: "hmac"}, secret: secretValue},
		{name: "TeardownPolicy reads its own namespace only", pol: namespaced, objs: []client.Object{signingSecretObj("teardown-system", "sig", "secret", secretValue)},
			ref: &teardownv1alpha1.SecretKeyReference{Name: "sig"}, opts: WebhookOptions{ClusterResourceNamespace: "teardown-system"}, wantErr: "signing Secret ns/sig not found"},
		{name: "ClusterTeardownPolicy reads the controller's namespace", pol: cluster, objs: []client.Object{signingSecretObj("teardown-system", "sig", "secret", secretValue)},
			ref: &teardownv1alpha1.SecretKeyReference{Name: "sig"}, opts: WebhookOptions{ClusterResourceNamespace: "teardown-system"}, secret: secretValue},
		{name: "ClusterTeardownPolicy without a controller namespace", pol: cluster, objs: []client.Object{signingSecretObj("teardown-system", "sig", "secret", secretValue)},
			ref: &teardownv1alpha1.SecretKeyReference{Name: "sig"}, wantErr: "--cluster-resource-namespace"},
		{name: "missing Secret", pol: namespaced, ref: &teardownv1alpha1.SecretKeyReference{Name: "sig"}, wantErr: "signing Secret ns/sig not found"},
		{name: "missing key", pol: namespaced, objs: []client.Object{signingSecretObj("ns", "sig", "other", secretValue)},
			ref: &teardownv1alpha1.SecretKeyReference{Name: "sig"}, wantErr: `signing Secret ns/sig has no key "secret"`},
		{name: "empty value", pol: namespaced, objs: []client.Object{signingSecretObj("ns", "sig", "secret", "")},
			ref: &teardownv1alpha1.SecretKeyReference{Name: "sig"}, wantErr: `signing Secret ns/sig has no key "secret", or it is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newSignedReceiver(t)
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tc.objs...).Build()
			opts := tc.opts
			opts.AllowHTTP, opts.AllowedCIDRs = true, loopbackV4
			r := &Runner{Client: c, Reader: c, HTTP: NewWebhookClients(opts), Now: clock}
			step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To(rc.URL + "/"), SigningSecretRef: tc.ref}}
			out := r.webhook(t.Context(), tc.pol, tc.pol.Key, step, target)
			if tc.wantErr != "" {
				if out.err == nil || out.definitive {
					t.Fatalf("outcome = %+v, want a transient error", out)
				}
				if !strings.Contains(out.message, tc.wantErr) {
					t.Errorf("message = %q, want it to contain %q", out.message, tc.wantErr)
				}
				if strings.Contains(out.message, secretValue) {
					t.Errorf("message %q shows the secret", out.message)
				}
				if rc.count() != 0 {
					t.Error("an unsigned request was sent")
				}
				return
			}
			if !out.done {
				t.Fatalf("outcome = %+v, want done", out)
			}
			req := rc.last(t)
			if err := VerifySignature(req.signature, []byte(tc.secret), req.body, now, SignatureTolerance); err != nil {
				t.Errorf("signature %q does not verify: %v", req.signature, err)
			}
			if want := "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1="; !strings.HasPrefix(req.signature, want) {
				t.Errorf("signature %q does not start with %q", req.signature, want)
			}
			if len(req.delivery) != 32 {
				t.Errorf("delivery id %q", req.delivery)
			}
		})
	}
}

// TestUnsignedWebhookRequests: without signingSecretRef no signature is sent,
// and every request has its own delivery id.
func TestUnsignedWebhookRequests(t *testing.T) {
	rc := newSignedReceiver(t)
	r := &Runner{HTTP: testClients()}
	pol, target := webhookTarget()
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To(rc.URL + "/")}}
	for range 2 {
		if out := r.webhook(t.Context(), pol, pol.Key, step, target); !out.done {
			t.Fatalf("outcome = %+v", out)
		}
	}
	if rc.requests[0].signature != "" {
		t.Errorf("unsigned request carries %s %q", SignatureHeader, rc.requests[0].signature)
	}
	if rc.requests[0].delivery == rc.requests[1].delivery {
		t.Error("two requests share a delivery id")
	}
}

// TestSigningSecretIsCachedBriefly: the Secret is read once a minute at
// most; a deleted Secret is noticed after that.
func TestSigningSecretIsCachedBriefly(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var gets int
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(signingSecretObj("ns", "sig", "secret", secretValue)).Build()
	counting := readerFunc(func() { gets++ }, c)
	r := &Runner{Client: c, Reader: counting, HTTP: testClients(), Now: func() time.Time { return now }}
	rc := newSignedReceiver(t)
	pol, target := webhookTarget()
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To(rc.URL + "/"), SigningSecretRef: &teardownv1alpha1.SecretKeyReference{Name: "sig"}}}
	for range 3 {
		if out := r.webhook(t.Context(), pol, pol.Key, step, target); !out.done {
			t.Fatalf("outcome = %+v", out)
		}
	}
	if gets != 1 {
		t.Errorf("the Secret was read %d times for 3 calls within a minute, want 1", gets)
	}
	if err := c.Delete(t.Context(), signingSecretObj("ns", "sig", "secret", "")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(secretTTL + time.Second)
	out := r.webhook(t.Context(), pol, pol.Key, step, target)
	if out.err == nil || out.definitive || !strings.Contains(out.message, "signing Secret ns/sig not found") {
		t.Errorf("after the cache expired, outcome = %+v, want the Secret not found", out)
	}
}

type countingReader struct {
	client.Reader
	onGet func()
}

func (c countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.onGet()
	return c.Reader.Get(ctx, key, obj, opts...)
}

func readerFunc(onGet func(), r client.Reader) client.Reader {
	return countingReader{Reader: r, onGet: onGet}
}

func TestVerifySignature(t *testing.T) {
	secret, body := []byte("k"), []byte(`{"a":1}`)
	now := time.Unix(1_800_000_000, 0)
	good := Signature(secret, now, body)
	for _, tc := range []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{name: "good", header: good, body: body, now: now},
		{name: "good, at the edge of the tolerance", header: good, body: body, now: now.Add(SignatureTolerance)},
		{name: "good, with spaces and an unknown field", header: strings.ReplaceAll(good, ",", ", ") + ",v0=zz", body: body, now: now},
		{name: "second v1 matches", header: good + ",v1=" + strings.Repeat("00", 32), body: body, now: now},
		{name: "other body", header: good, body: []byte(`{"a":2}`), now: now, want: ErrSignatureMismatch},
		{name: "other secret", header: Signature([]byte("j"), now, body), body: body, now: now, want: ErrSignatureMismatch},
		{name: "too old", header: good, body: body, now: now.Add(SignatureTolerance + time.Second), want: ErrSignatureExpired},
		{name: "from the future", header: good, body: body, now: now.Add(-SignatureTolerance - time.Second), want: ErrSignatureExpired},
		{name: "timestamp changed", header: strings.Replace(good, "t=1800000000", "t=1800000001", 1), body: body, now: now, want: ErrSignatureMismatch},
		{name: "empty", header: "", body: body, now: now, want: ErrSignatureMalformed},
		{name: "no v1", header: "t=1800000000", body: body, now: now, want: ErrSignatureMalformed},
		{name: "negative t", header: strings.Replace(good, "t=", "t=-", 1), body: body, now: now, want: ErrSignatureMalformed},
		{name: "two t", header: "t=1," + good, body: body, now: now, want: ErrSignatureMalformed},
		{name: "short v1", header: "t=1800000000,v1=abcd", body: body, now: now, want: ErrSignatureMalformed},
		{name: "too long", header: good + strings.Repeat(",x=y", 400), body: body, now: now, want: ErrSignatureMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := VerifySignature(tc.header, secret, tc.body, tc.now, SignatureTolerance); !errors.Is(err, tc.want) {
				t.Errorf("VerifySignature = %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzSignature: a signature always verifies with its own secret, body and
// time, and VerifySignature never panics nor accepts a header that is not
// the signature of that body (the only valid v1 value).
func FuzzSignature(f *testing.F) {
	f.Add([]byte("secret"), []byte(`{"a":1}`), int64(1_800_000_000), "t=1800000000,v1=00")
	f.Add([]byte(""), []byte(""), int64(0), "")
	f.Add([]byte("k"), []byte("b"), int64(-5), "t=,v1=,v1")
	f.Fuzz(func(t *testing.T, secret, body []byte, unix int64, header string) {
		if unix < 0 || unix > 1<<40 {
			return
		}
		at := time.Unix(unix, 0)
		sig := Signature(secret, at, body)
		if err := VerifySignature(sig, secret, body, at, SignatureTolerance); err != nil {
			t.Fatalf("own signature %q does not verify: %v", sig, err)
		}
		err := VerifySignature(header, secret, body, at, SignatureTolerance)
		if err == nil && !strings.Contains(strings.ToLower(header), sig[strings.Index(sig, ",v1=")+1:]) {
			t.Fatalf("header %q verified without the body's signature", header)
		}
	})
}
