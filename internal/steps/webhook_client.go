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
	"slices"
	"sync"
)

// HTTPClients is the webhook steps' side of the network: one HTTP client per
// CA bundle, so connections are reused across calls and certificates are
// parsed once, every one dialling through the destination guard
// (webhook_dial.go); the operator's WebhookOptions; and the signing secrets
// read lately (webhook_sign.go).
type HTTPClients struct {
	opts    WebhookOptions
	secrets secretCache

	mu      sync.Mutex
	clients map[[32]byte]*http.Client
}

// NewHTTPClients returns an empty set of clients with the default options:
// https only, no loopback, link-local, metadata or unspecified destination.
func NewHTTPClients() *HTTPClients { return NewWebhookClients(WebhookOptions{}) }

// NewWebhookClients returns an empty set of clients with the operator's
// options.
func NewWebhookClients(opts WebhookOptions) *HTTPClients {
	opts.AllowedCIDRs = slices.Clone(opts.AllowedCIDRs)
	return &HTTPClients{opts: opts, clients: map[[32]byte]*http.Client{}}
}

func (h *HTTPClients) forCABundle(caBundle []byte) (*http.Client, error) {
	key := sha256.Sum256(caBundle)
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[key]; ok {
		return c, nil
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	// Every target worker may call the same webhook at once: keep that many
	// connections open instead of http's default of 2 per host.
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 256, 64
	// Every connection, TLS or not, is dialled through the guard.
	transport.DialContext = dialContext(h.opts.AllowedCIDRs)
	// No proxy from the environment: a proxy would connect to the
	// destination on the controller's behalf, out of the guard's sight.
	transport.Proxy = nil
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
