/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sync"
)

// HTTPClients is the webhook steps' side of the network: one HTTP client per
// CA bundle and kind of policy, so connections are reused across calls and
// certificates are parsed once, every one dialling through the destination
// guard (webhook_dial.go); the operator's WebhookOptions; and the signing
// secrets read lately (webhook_sign.go).
type HTTPClients struct {
	opts    WebhookOptions
	secrets secretCache
	// dial is the guarded dialer; tests replace it to see what is dialled.
	dial dialFunc

	mu      sync.Mutex
	clients map[clientKey]*http.Client
}

// clientKey picks a client. TeardownPolicies' calls have clients of their
// own, which dial absolute names (absoluteDial): a connection the resolver's
// search path chose for a ClusterTeardownPolicy's call is never reused for a
// TeardownPolicy's, even to the same host and port.
type clientKey struct {
	caBundle   [32]byte
	namespaced bool
	// proxied clients call through WebhookOptions.Proxy (webhook_proxy.go).
	proxied bool
}

// NewHTTPClients returns an empty set of clients with the default options:
// https only, no loopback, link-local, metadata or unspecified destination.
func NewHTTPClients() *HTTPClients { return NewWebhookClients(WebhookOptions{}) }

// NewWebhookClients returns an empty set of clients with the operator's
// options.
func NewWebhookClients(opts WebhookOptions) *HTTPClients {
	opts.AllowedCIDRs = slices.Clone(opts.AllowedCIDRs)
	return &HTTPClients{opts: opts, dial: dialContext(opts.AllowedCIDRs), clients: map[clientKey]*http.Client{}}
}

// forCABundle is the client of a ClusterTeardownPolicy's calls.
func (h *HTTPClients) forCABundle(caBundle []byte) (*http.Client, error) {
	return h.forCall(caBundle, "")
}

// forURL is the client of a call to target trusting caBundle, for a
// TeardownPolicy of namespace ns, or a ClusterTeardownPolicy when ns is "":
// through the operator's proxy when there is one and target's host is an
// address or an outside name (viaProxy), else direct.
func (h *HTTPClients) forURL(caBundle []byte, ns, target string) (*http.Client, error) {
	if h.opts.Proxy != nil {
		if u, err := url.Parse(target); err == nil && viaProxy(u.Hostname(), h.opts.ClusterDomain) {
			return h.client(clientKey{caBundle: sha256.Sum256(caBundle), namespaced: ns != "", proxied: true}, caBundle)
		}
	}
	return h.forCall(caBundle, ns)
}

// forCall is the client of a direct call trusting caBundle, for a
// TeardownPolicy of namespace ns, or a ClusterTeardownPolicy when ns is "".
func (h *HTTPClients) forCall(caBundle []byte, ns string) (*http.Client, error) {
	return h.client(clientKey{caBundle: sha256.Sum256(caBundle), namespaced: ns != ""}, caBundle)
}

func (h *HTTPClients) client(key clientKey, caBundle []byte) (*http.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[key]; ok {
		return c, nil
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	// Every target worker may call the same webhook at once: keep that many
	// connections open instead of http's default of 2 per host.
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 256, 64
	// Every connection, TLS or not, is dialled through the guard; a
	// TeardownPolicy's, by the absolute name of its host.
	transport.DialContext = h.dial
	if key.namespaced {
		transport.DialContext = absoluteDial(h.opts.ClusterDomain, h.dial)
	}
	// No proxy from the environment: a proxy would connect to the
	// destination on the controller's behalf, out of the guard's sight.
	transport.Proxy = nil
	if key.proxied {
		// The operator's proxy: the transport dials only the proxy,
		// through the guard; the proxy resolves and connects to the
		// destination (CONNECT for https, so TLS stays end to end), whose
		// URL was checked before the call (CheckDestination). The names
		// sent to it are IP addresses or absolute, so no search domain of
		// the proxy's applies.
		transport.Proxy = http.ProxyURL(h.opts.Proxy)
		transport.DialContext = proxyDial(h.dial, h.opts.Proxy.Host)
	}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("webhook caBundle holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c := &http.Client{
		Transport: transport,
		// Redirects are never followed: a receiver could send the call (and
		// its payload) anywhere, including addresses the controller reaches
		// and the policy author does not. A 3xx is reported as a failure.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	h.clients[key] = c
	return c, nil
}
