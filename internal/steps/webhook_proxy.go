/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// WebhookProxyFlag names the controller flag of the webhook proxy.
const WebhookProxyFlag = "webhook-proxy"

// ParseWebhookProxy reads --webhook-proxy: an http:// or https:// URL of an
// HTTP proxy (user:password@ for basic authentication, no path). The proxy's
// address is under the destination guard like any webhook destination: a
// literal loopback, link-local, metadata or unspecified address, or
// localhost, is refused here unless allowed prefixes hold it; a name is
// judged at every connection, on the addresses it resolves to. "" is no
// proxy.
func ParseWebhookProxy(raw string, allowed []netip.Prefix) (*url.URL, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("--%s: not a URL", WebhookProxyFlag)
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("--%s=%s: the proxy URL must be http:// or https://", WebhookProxyFlag, shown)
	case u.Hostname() == "":
		return nil, fmt.Errorf("--%s=%s: the proxy URL has no host", WebhookProxyFlag, shown)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return nil, fmt.Errorf("--%s=%s: the proxy URL is scheme://host:port only", WebhookProxyFlag, shown)
	}
	if err := checkProxyHost(u.Hostname(), allowed); err != nil {
		return nil, fmt.Errorf("--%s=%s: %w", WebhookProxyFlag, shown, err)
	}
	return u, nil
}

// checkProxyHost is CheckWebhookDestination's check of a literal host,
// worded for the proxy.
func checkProxyHost(host string, allowed []netip.Prefix) error {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	var refused *DestinationError
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		v4, v6 := checkAddr(netip.MustParseAddr("127.0.0.1"), allowed), checkAddr(netip.IPv6Loopback(), allowed)
		if v4 != nil && v6 != nil {
			refused = &DestinationError{Addr: h, Reason: "loopback"}
		}
	} else if addr, err := netip.ParseAddr(h); err == nil {
		if err := checkAddr(addr, allowed); err != nil && !errors.As(err, &refused) {
			return err
		}
	}
	if refused != nil {
		return &ProxyError{Proxy: host, Reason: refused.Reason, Addr: refused.Addr}
	}
	return nil
}

// ProxyError says the guard refused the webhook proxy's address. At a call
// it is a transient error of the step, not a definitive failure of the
// policy: the operator's flag is at fault, and fixing it lets the step go
// on.
type ProxyError struct {
	Proxy, Addr, Reason string
}

func (e *ProxyError) Error() string {
	return fmt.Sprintf("the webhook proxy %s is not allowed: %s (%s); allow it with --%s", e.Proxy, e.Reason, e.Addr, AllowedCIDRsFlag)
}

// viaProxy says whether a call to host goes through the proxy: IP
// addresses and absolute names outside the cluster domain (written with a
// trailing dot) do; every name the cluster's DNS may answer (a Service, a
// pod, a short or relative name, which the resolver tries in the cluster
// domain first) is called directly, as egress proxies are configured with
// NO_PROXY=.svc,.cluster.local. A TeardownPolicy may call only such outside
// names and addresses, or names of its own namespace, which are dialled
// directly by their absolute name.
func viaProxy(host, domain string) bool {
	switch ClassifyHost(host, domain).Kind {
	case HostIP, HostExternal:
		return true
	}
	return false
}

// proxyDial is the DialContext of the clients that call through the proxy:
// their transport dials only the proxy, through the guard. A refusal names
// the proxy and is not a *DestinationError, so that the step is retried
// (transient) rather than failed for good.
func proxyDial(base dialFunc, proxy string) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := base(ctx, network, addr)
		var refused *DestinationError
		if errors.As(err, &refused) {
			return nil, &ProxyError{Proxy: proxy, Reason: refused.Reason, Addr: refused.Addr}
		}
		return conn, err
	}
}
