/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// testProxy is an HTTP proxy on 127.0.0.1: CONNECT tunnels go to
// tlsUpstream and absolute-form requests to plainUpstream, whatever host
// they name (so that a name only the proxy "resolves" reaches the test
// receivers). It records what it was asked for.
type testProxy struct {
	*httptest.Server
	tlsUpstream, plainUpstream string

	mu   sync.Mutex
	seen []string
}

func newTestProxy(t *testing.T, tlsUpstream, plainUpstream string) *testProxy {
	p := &testProxy{tlsUpstream: tlsUpstream, plainUpstream: plainUpstream}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *testProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.record("CONNECT " + r.Host)
		upstream, err := net.Dial("tcp", p.tlsUpstream)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { _, _ = io.Copy(upstream, conn); upstream.Close() }()
		_, _ = io.Copy(conn, upstream)
		conn.Close()
		return
	}
	p.record(r.Method + " " + r.URL.String())
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Host = p.plainUpstream
	resp, err := (&http.Transport{}).RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *testProxy) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, s)
}

func (p *testProxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// TestWebhookThroughProxy: with --webhook-proxy, calls to outside names
// (written absolute) and to IP addresses go through the proxy: https by
// CONNECT to the name as written (TLS verified end to end against the
// receiver's certificate), plain http in absolute form. The receivers are
// reached only through the proxy: the controller never resolves
// example.com. to them. Calls to cluster names go direct (the proxy is not
// asked), and a TeardownPolicy's names are still held to its namespace.
func TestWebhookThroughProxy(t *testing.T) {
	tlsRecv := newHeaderReceiver(t)
	tlsRecv.Close()
	tlsRecv.Server = httptest.NewTLSServer(tlsRecv.Config.Handler) // its certificate is for example.com and 127.0.0.1
	t.Cleanup(tlsRecv.Close)
	plainRecv := newHeaderReceiver(t)
	proxy := newTestProxy(t, tlsRecv.Listener.Addr().String(), plainRecv.Listener.Addr().String())
	proxyURL, err := ParseWebhookProxy(proxy.URL, loopbackV4)
	if err != nil {
		t.Fatal(err)
	}
	ca := pemCert(t, tlsRecv.Server)
	cluster := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "c"}, Key: "x.io/y"}
	namespaced, target := webhookTarget() // a TeardownPolicy of namespace "ns"
	for _, tc := range []struct {
		name     string
		pol      *policy.Policy
		url      string
		wantAsk  []string // what the proxy was asked
		wantDial []string // what the controller dialled itself, besides the proxy
		wantErr  string   // a failure of the step (definitive when definite)
		definite bool
	}{
		{name: "https to an outside name", pol: cluster, url: "https://example.com./cleanup", wantAsk: []string{"CONNECT example.com.:443"}},
		{name: "https to an outside name, from a TeardownPolicy", pol: namespaced, url: "https://example.com.:8443/cleanup", wantAsk: []string{"CONNECT example.com.:8443"}},
		{name: "https to an address", pol: cluster, url: "https://" + tlsRecv.Listener.Addr().String() + "/cleanup", wantAsk: []string{"CONNECT " + tlsRecv.Listener.Addr().String()}},
		{name: "plain http to an outside name", pol: cluster, url: "http://example.com./cleanup", wantAsk: []string{"POST http://example.com./cleanup"}},
		{name: "a Service of its namespace: direct", pol: namespaced, url: "https://cleaner.ns.svc/cleanup",
			wantDial: []string{"cleaner.ns.svc.cluster.local.:443"}, wantErr: "request failed"},
		{name: "a relative name of a ClusterTeardownPolicy: direct", pol: cluster, url: "https://hooks.example.com/cleanup",
			wantDial: []string{"hooks.example.com:443"}, wantErr: "request failed"},
		{name: "another namespace's Service: refused before anything", pol: namespaced, url: "https://cleaner.victim.svc/cleanup",
			wantErr: "names a Service of namespace victim", definite: true},
		{name: "a forbidden address: refused before anything", pol: cluster, url: "https://169.254.169.254/latest/meta-data/",
			wantErr: "destination 169.254.169.254 is not allowed: cloud metadata", definite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(proxy.asked())
			h := NewWebhookClients(WebhookOptions{AllowHTTP: true, AllowedCIDRs: loopbackV4, Proxy: proxyURL})
			// The controller's own dials: the proxy's address is dialled for
			// real, anything else is recorded and not connected.
			var direct recordingDial
			guarded := h.dial
			h.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == proxyURL.Host {
					return guarded(ctx, network, addr)
				}
				return direct.dial(ctx, network, addr)
			}
			r := &Runner{HTTP: h}
			step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To(tc.url), CABundle: ca}}
			out := r.webhook(t.Context(), tc.pol, tc.pol.Key, step, target)
			if tc.wantErr == "" && !out.done {
				t.Fatalf("outcome = %+v, want done", out)
			}
			if tc.wantErr != "" && (out.err == nil || out.definitive != tc.definite || !strings.Contains(out.message, tc.wantErr)) {
				t.Fatalf("outcome = %+v, want an error (definitive: %v) containing %q", out, tc.definite, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantAsk, proxy.asked()[before:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the proxy was asked (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDial, direct.addrs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the controller dialled (-want +got):\n%s", diff)
			}
		})
	}
	if n := tlsRecv.answered + plainRecv.answered; n != 4 {
		t.Errorf("the receivers got %d calls, want 4 (all through the proxy)", n)
	}
}

// TestNoProxyFromTheEnvironment: without --webhook-proxy, HTTPS_PROXY and
// HTTP_PROXY are ignored: the controller dials the destination itself and
// the proxy is never asked. With the flag the same call goes through it (the
// positive control). The destination is an outside name, which the
// environment's proxy would carry (it never carries 127.0.0.1).
func TestNoProxyFromTheEnvironment(t *testing.T) {
	recv := newHeaderReceiver(t)
	proxy := newTestProxy(t, "", recv.Listener.Addr().String())
	proxyURL, _ := url.Parse(proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	_, target := webhookTarget()
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "c"}, Key: "x.io/y"}
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To("http://example.com./cleanup")}}
	for _, tc := range []struct {
		name             string
		flag             *url.URL
		wantAsk, wantDir int
	}{
		{name: "no flag", wantDir: 1},
		{name: "--webhook-proxy", flag: proxyURL, wantAsk: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(proxy.asked())
			h := NewWebhookClients(WebhookOptions{AllowHTTP: true, AllowedCIDRs: loopbackV4, Proxy: tc.flag})
			var direct recordingDial
			guarded := h.dial
			h.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == proxyURL.Host {
					return guarded(ctx, network, addr)
				}
				return direct.dial(ctx, network, addr)
			}
			_ = (&Runner{HTTP: h}).webhook(t.Context(), pol, pol.Key, step, target)
			if got := len(proxy.asked()) - before; got != tc.wantAsk {
				t.Errorf("the proxy was asked %d times, want %d", got, tc.wantAsk)
			}
			if got := len(direct.addrs); got != tc.wantDir {
				t.Errorf("the controller dialled %q itself, want %d dial(s)", direct.addrs, tc.wantDir)
			}
		})
	}
}

// TestProxyAddressGuardedAtCall: a proxy whose address the guard refuses
// (loopback, not allowed) is never connected to: the call fails with a
// transient error naming the proxy and the flag, and the proxy is never
// asked. ParseWebhookProxy refuses such a literal address at start; this is
// the same guard for a proxy named by a host name, judged on what it
// resolves to at every connection.
func TestProxyAddressGuardedAtCall(t *testing.T) {
	recv := newHeaderReceiver(t)
	proxy := newTestProxy(t, "", recv.Listener.Addr().String())
	proxyURL, _ := url.Parse(proxy.URL)
	r := &Runner{HTTP: NewWebhookClients(WebhookOptions{AllowHTTP: true, Proxy: proxyURL})}
	pol, target := webhookTarget()
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To("http://example.com./cleanup")}}
	out := r.webhook(t.Context(), pol, pol.Key, step, target)
	want := "the webhook proxy " + proxyURL.Host + " is not allowed: loopback (127.0.0.1); allow it with --webhook-allowed-cidrs"
	if out.err == nil || out.definitive || !strings.Contains(out.message, want) {
		t.Errorf("outcome = %+v, want a transient error containing %q", out, want)
	}
	if got := proxy.asked(); len(got) != 0 {
		t.Errorf("the refused proxy was asked %q", got)
	}
}

func TestParseWebhookProxy(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		allowed []netip.Prefix
		want    string // the URL's Redacted form, or the error
	}{
		{raw: "", want: ""},
		{raw: "http://proxy.corp.example:3128", want: "http://proxy.corp.example:3128"},
		{raw: "https://10.0.0.5:3129/", want: "https://10.0.0.5:3129/"},
		{raw: "http://user:pass@proxy.corp.example:3128", want: "http://user:xxxxx@proxy.corp.example:3128"},
		{raw: "http://127.0.0.1:3128", allowed: loopbackV4, want: "http://127.0.0.1:3128"},
		{raw: "http://127.0.0.1:3128", want: "--webhook-proxy=http://127.0.0.1:3128: the webhook proxy 127.0.0.1 is not allowed: loopback (127.0.0.1); allow it with --webhook-allowed-cidrs"},
		{raw: "http://[::1]:3128", want: "--webhook-proxy=http://[::1]:3128: the webhook proxy ::1 is not allowed: loopback (::1); allow it with --webhook-allowed-cidrs"},
		{raw: "http://localhost:3128", want: "--webhook-proxy=http://localhost:3128: the webhook proxy localhost is not allowed: loopback (localhost); allow it with --webhook-allowed-cidrs"},
		{raw: "http://169.254.169.254:80", allowed: loopbackV4, want: "--webhook-proxy=http://169.254.169.254:80: the webhook proxy 169.254.169.254 is not allowed: cloud metadata (169.254.169.254); allow it with --webhook-allowed-cidrs"},
		{raw: "http://169.254.10.1:3128", want: "--webhook-proxy=http://169.254.10.1:3128: the webhook proxy 169.254.10.1 is not allowed: link-local (169.254.10.1); allow it with --webhook-allowed-cidrs"},
		{raw: "http://u:secret@127.0.0.1:3128", want: "--webhook-proxy=http://u:xxxxx@127.0.0.1:3128: the webhook proxy 127.0.0.1 is not allowed: loopback (127.0.0.1); allow it with --webhook-allowed-cidrs"},
		{raw: "socks5://proxy:1080", want: "--webhook-proxy=socks5://proxy:1080: the proxy URL must be http:// or https://"},
		{raw: "proxy.corp.example:3128", want: "--webhook-proxy=proxy.corp.example:3128: the proxy URL must be http:// or https://"},
		{raw: "http://:3128", want: "--webhook-proxy=http://:3128: the proxy URL has no host"},
		{raw: "http://proxy:3128/path", want: "--webhook-proxy=http://proxy:3128/path: the proxy URL is scheme://host:port only"},
	} {
		u, err := ParseWebhookProxy(tc.raw, tc.allowed)
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case u != nil:
			got = u.Redacted()
		}
		if got != tc.want {
			t.Errorf("ParseWebhookProxy(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}
