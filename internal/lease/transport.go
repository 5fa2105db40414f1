/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lease

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
)

// Fence returns a copy of cfg whose every client (and every copy of it:
// impersonating clients, dynamic clients) asks the Gate before it sends a
// write to the API server, so that no write path can forget to. Reads and
// reviews (TokenReview, SubjectAccessReview: questions, not writes) pass.
// The leader election's own client must not be fenced: build it from cfg.
func (g *Gate) Fence(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if g == nil {
		return cfg
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &fenced{rt: rt, gate: g} })
	return cfg
}

type fenced struct {
	rt   http.RoundTripper
	gate *Gate
}

func (f *fenced) RoundTrip(req *http.Request) (*http.Response, error) {
	if Writes(req.Method, req.URL.Path) {
		if err := f.gate.Allow(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
		}
	}
	return f.rt.RoundTrip(req)
}

// Writes reports whether a request with this method and path changes the
// cluster's state: every POST, PUT, PATCH and DELETE but the reviews the
// authentication.k8s.io and authorization.k8s.io groups answer without
// storing anything.
func Writes(method, path string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false
	}
	return !strings.HasPrefix(path, "/apis/authentication.k8s.io/") && !strings.HasPrefix(path, "/apis/authorization.k8s.io/")
}

// WrappedRoundTripper lets client-go reach the transport below, to cancel
// a request (k8s.io/apimachinery/pkg/util/net.RoundTripperWrapper).
func (f *fenced) WrappedRoundTripper() http.RoundTripper { return f.rt }
