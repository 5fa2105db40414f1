/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

var loopbackV4 = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// testClients are the clients of tests whose receivers are httptest servers:
// plain http on 127.0.0.1.
func testClients() *HTTPClients {
	return NewWebhookClients(WebhookOptions{AllowHTTP: true, AllowedCIDRs: loopbackV4})
}

// serverText is what the test servers answer; it must never appear in an
// outcome.
const serverText = "AccessKeyId=AKIASECRET"

// countingServer is a 127.0.0.1 server that counts its requests and answers
// with text that must never be echoed.
func countingServer(t *testing.T, tls bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusForbidden) // a permanent 4xx, with a message: echoed if reached
		_, _ = io.WriteString(w, `{"status":"Failure","message":"`+serverText+`"}`)
	})
	srv := httptest.NewUnstartedServer(h)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &hits
}

func webhookTarget() (*policy.Policy, Object) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u1"}}
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p"}, Key: "x.io/y"}
	return pol, Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: obj}
}

func callWebhook(t *testing.T, h *HTTPClients, w *teardownv1alpha1.WebhookAction) outcome {
	t.Helper()
	pol, target := webhookTarget()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	r := &Runner{HTTP: h}
	return r.webhook(ctx, pol, pol.Key, teardownv1alpha1.Step{Name: "notify", Webhook: w}, target)
}

// TestWebhookDestinations: the table of destinations the issue asks for.
// Every forbidden destination is refused as a definitive failure whose
// message says why and names the flag, the 127.0.0.1 test server is never
// reached, and nothing it would answer appears. Only 127.0.0.1 servers
// exist: for the other addresses, the refusal is shown to come from the
// dialer's Control (a *DestinationError, returned at once), which runs before
// the connection is attempted, so no packet leaves.
func TestWebhookDestinations(t *testing.T) {
	srv, hits := countingServer(t, false)
	port := srv.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	httpOnly := WebhookOptions{AllowHTTP: true} // isolate the address guard from the scheme rule

	redirectTo := func(target string) string {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target, http.StatusFound)
		}))
		t.Cleanup(redirector.Close)
		return redirector.URL + "/cleanup"
	}

	for _, tc := range []struct {
		name string
		url  string
		opts WebhookOptions
		// want is in the message of the definitive failure.
		want string
		// dial: the URL also goes straight to the guarded client (past
		// CheckWebhookDestination), which must refuse it in Control.
		dial bool
	}{
		{name: "loopback IP", url: "http://127.0.0.1:" + port + "/", opts: httpOnly, want: "destination 127.0.0.1 is not allowed: loopback; allow it with --webhook-allowed-cidrs", dial: true},
		{name: "other loopback IP", url: "http://127.0.0.2:" + port + "/", opts: httpOnly, want: "destination 127.0.0.2 is not allowed: loopback", dial: true},
		{name: "name resolving to loopback", url: "http://localhost:" + port + "/", opts: httpOnly, want: "destination localhost is not allowed: loopback", dial: true},
		{name: "IPv6 loopback", url: "http://[::1]:" + port + "/", opts: httpOnly, want: "destination ::1 is not allowed: loopback", dial: true},
		{name: "IPv4-mapped loopback", url: "http://[::ffff:127.0.0.1]:" + port + "/", opts: httpOnly, want: "destination 127.0.0.1 is not allowed: loopback", dial: true},
		{name: "metadata", url: "http://169.254.169.254/latest/meta-data/iam/security-credentials/", opts: httpOnly, want: "destination 169.254.169.254 is not allowed: cloud metadata", dial: true},
		{name: "metadata over IPv6", url: "http://[fd00:ec2::254]/latest/meta-data/", opts: httpOnly, want: "destination fd00:ec2::254 is not allowed: cloud metadata", dial: true},
		{name: "Alibaba metadata", url: "http://100.100.100.200/latest/meta-data/", opts: httpOnly, want: "destination 100.100.100.200 is not allowed: cloud metadata", dial: true},
		{name: "link-local", url: "http://169.254.10.1/", opts: httpOnly, want: "destination 169.254.10.1 is not allowed: link-local", dial: true},
		{name: "IPv6 link-local", url: "http://[fe80::1]/", opts: httpOnly, want: "destination fe80::1 is not allowed: link-local", dial: true},
		{name: "unspecified", url: "http://0.0.0.0:" + port + "/", opts: httpOnly, want: "destination 0.0.0.0 is not allowed: unspecified", dial: true},
		{name: "IPv6 unspecified", url: "http://[::]:" + port + "/", opts: httpOnly, want: "destination :: is not allowed: unspecified", dial: true},
		{name: "allowed loopback does not open metadata", url: "http://169.254.169.254/", opts: WebhookOptions{AllowHTTP: true, AllowedCIDRs: loopbackV4}, want: "destination 169.254.169.254 is not allowed: cloud metadata", dial: true},
		{name: "http without --webhook-allow-http", url: srv.URL + "/", opts: WebhookOptions{AllowedCIDRs: loopbackV4}, want: "plain http is not allowed; use https, or allow it with --webhook-allow-http"},
		{name: "redirect to loopback", url: redirectTo(srv.URL + "/x"), opts: testClients().opts, want: "redirects are not followed"},
		{name: "redirect to a name resolving to loopback", url: redirectTo("http://localhost:" + port + "/x"), opts: testClients().opts, want: "redirects are not followed"},
		{name: "redirect to IPv6 loopback", url: redirectTo("http://[::1]:" + port + "/x"), opts: testClients().opts, want: "redirects are not followed"},
		{name: "redirect to metadata", url: redirectTo("http://169.254.169.254/latest/meta-data/"), opts: testClients().opts, want: "redirects are not followed"},
		{name: "redirect to link-local", url: redirectTo("http://[fe80::1]/"), opts: testClients().opts, want: "redirects are not followed"},
		{name: "redirect to unspecified", url: redirectTo("http://0.0.0.0:" + port + "/x"), opts: testClients().opts, want: "redirects are not followed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			h := NewWebhookClients(tc.opts)
			w := &teardownv1alpha1.WebhookAction{URL: ptr.To(tc.url)}
			start := time.Now()
			out := callWebhook(t, h, w)
			if out.err == nil || !out.definitive {
				t.Fatalf("outcome = %+v, want a definitive failure", out)
			}
			if !strings.Contains(out.message, tc.want) {
				t.Errorf("message = %q, want it to contain %q", out.message, tc.want)
			}
			if strings.Contains(out.message, "AKIA") || strings.Contains(out.message, "AccessKey") {
				t.Errorf("message %q repeats what the server sent", out.message)
			}
			if tc.dial {
				// Past the URL check, straight to the guarded client.
				c, err := h.forCABundle(nil)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, tc.url, strings.NewReader("{}"))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := c.Do(req)
				if err == nil {
					resp.Body.Close()
					t.Fatalf("the guarded client reached %s (HTTP %d)", tc.url, resp.StatusCode)
				}
				var destErr *DestinationError
				if !errors.As(err, &destErr) {
					t.Fatalf("the guarded client's error %v is not the guard's refusal", err)
				}
				desc := describeCallError(err)
				if !strings.HasPrefix(desc, "destination ") || !strings.Contains(desc, "is not allowed") {
					t.Errorf("describeCallError = %q", desc)
				}
			}
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("the refusal took %s: it must come from the guard, not a timeout", elapsed)
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the test server was reached %d times", n)
			}
		})
	}
}

// TestWebhookAllowedDestinations: what the operator allows is reached.
func TestWebhookAllowedDestinations(t *testing.T) {
	t.Run("allowed CIDR, plain http allowed", func(t *testing.T) {
		srv, hits := countingServer(t, false)
		out := callWebhook(t, testClients(), &teardownv1alpha1.WebhookAction{URL: ptr.To(srv.URL + "/")})
		if hits.Load() != 1 {
			t.Fatalf("the server was reached %d times, want 1 (outcome %+v)", hits.Load(), out)
		}
		// The server answers 403 with a well-formed message: only that
		// field comes through.
		if !out.definitive || !strings.Contains(out.message, "webhook answered HTTP 403: "+serverText) {
			t.Errorf("outcome = %+v", out)
		}
	})
	t.Run("allowed CIDR over https, http not allowed", func(t *testing.T) {
		srv, hits := countingServer(t, true)
		caBundle := pemCert(t, srv)
		opts := WebhookOptions{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
		_ = callWebhook(t, NewWebhookClients(opts), &teardownv1alpha1.WebhookAction{URL: ptr.To(srv.URL + "/"), CABundle: caBundle})
		if hits.Load() != 1 {
			t.Fatalf("the server was reached %d times, want 1", hits.Load())
		}
	})
	t.Run("localhost with loopback allowed", func(t *testing.T) {
		// A ClusterTeardownPolicy's call: a TeardownPolicy's is refused
		// for naming a single label (TestCallTimeNamespaceRefusal).
		srv, hits := countingServer(t, false)
		u := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
		_, target := webhookTarget()
		pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "c"}, Key: "x.io/y"}
		r := &Runner{HTTP: testClients()}
		_ = r.webhook(t.Context(), pol, pol.Key, teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To(u + "/")}}, target)
		if hits.Load() != 1 {
			t.Fatalf("the server was reached %d times, want 1", hits.Load())
		}
	})
}

// TestCheckWebhookDestination: what validation can tell from the policy
// alone.
func TestCheckWebhookDestination(t *testing.T) {
	svc := &teardownv1alpha1.WebhookAction{Service: &teardownv1alpha1.ServiceReference{Namespace: "shop", Name: "cleaner"}}
	for _, tc := range []struct {
		name      string
		w         *teardownv1alpha1.WebhookAction
		allowHTTP bool
		allowed   []netip.Prefix
		want      string // "" means accepted
	}{
		{name: "https name", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://cleaner.shop.svc/cleanup")}},
		{name: "service", w: svc},
		{name: "public IP", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://203.0.113.7/")}},
		{name: "http", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("http://cleaner.shop.svc/")}, want: "plain http is not allowed"},
		{name: "HTTP upper case", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("HTTP://cleaner.shop.svc/")}, want: "plain http is not allowed"},
		{name: "http allowed", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("http://cleaner.shop.svc/")}, allowHTTP: true},
		{name: "loopback", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://127.0.0.1:8443/")}, want: "destination 127.0.0.1 is not allowed: loopback; allow it with --webhook-allowed-cidrs"},
		{name: "loopback allowed", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://127.0.0.1:8443/")}, allowed: loopbackV4},
		{name: "localhost", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://localhost/")}, want: "destination localhost is not allowed: loopback"},
		{name: "localhost with a trailing dot", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://LocalHost./")}, want: "destination localhost is not allowed: loopback"},
		{name: "a .localhost name", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://x.localhost/")}, want: "destination x.localhost is not allowed: loopback"},
		{name: "localhost allowed", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://localhost/")}, allowed: loopbackV4},
		{name: "IPv6 loopback", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://[::1]/")}, want: "destination ::1 is not allowed: loopback"},
		{name: "IPv4-mapped", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://[::ffff:169.254.169.254]/")}, want: "destination 169.254.169.254 is not allowed: cloud metadata"},
		{name: "zoned link-local", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://[fe80::1%25eth0]/")}, want: "destination fe80::1 is not allowed: link-local"},
		{name: "metadata", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://169.254.169.254/")}, want: "cloud metadata"},
		{name: "metadata not opened by allowing loopback", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://169.254.169.254/")}, allowed: loopbackV4, want: "cloud metadata"},
		{name: "metadata allowed on purpose", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://169.254.169.254/")}, allowed: []netip.Prefix{netip.MustParsePrefix("169.254.169.254/32")}},
		{name: "Alibaba metadata", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://100.100.100.200/")}, want: "cloud metadata"},
		{name: "AWS IPv6 metadata", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://[fd00:ec2::254]/")}, want: "cloud metadata"},
		{name: "unspecified", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://0.0.0.0/")}, want: "unspecified"},
		{name: "IPv6 unspecified", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("https://[::]/")}, want: "unspecified"},
		{name: "other scheme", w: &teardownv1alpha1.WebhookAction{URL: ptr.To("ftp://cleaner/")}, want: "must be http:// or https://"},
		{name: "nil", w: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckWebhookDestination(tc.w, tc.allowHTTP, tc.allowed)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("accepted, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	var c CIDRs
	for _, v := range []string{"127.0.0.0/8, ::1", "10.0.0.1"} {
		if err := c.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := c.String(), "127.0.0.0/8,::1/128,10.0.0.1/32"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := c.Set("127.0.0.0/33"); err == nil {
		t.Error("a bad prefix was accepted")
	}
	if err := c.Set("localhost"); err == nil {
		t.Error("a name was accepted")
	}
}

// pemCert is the CA bundle of an httptest TLS server.
func pemCert(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
