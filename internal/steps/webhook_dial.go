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
	"syscall"
	"time"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// The flags an operator loosens the webhook destination guard with; messages
// name them.
const (
	AllowedCIDRsFlag = "webhook-allowed-cidrs"
	AllowHTTPFlag    = "webhook-allow-http"
)

// WebhookOptions are the operator's choices for webhook steps.
type WebhookOptions struct {
	// AllowHTTP lets webhook steps call plain http:// URLs; by default only
	// https:// is called.
	AllowHTTP bool
	// AllowedCIDRs are destinations the guard would refuse (loopback,
	// link-local, cloud metadata, unspecified) that may be called anyway,
	// such as 127.0.0.0/8 for a test server on the controller's host.
	AllowedCIDRs []netip.Prefix
	// ClusterResourceNamespace is the namespace of the signing Secrets of
	// ClusterTeardownPolicies (normally the controller's own).
	ClusterResourceNamespace string
}

// forbiddenRange is a range of addresses a webhook step never connects to
// unless the operator allows it.
type forbiddenRange struct {
	prefix netip.Prefix
	why    string
}

// forbidden lists the ranges the guard refuses, the most specific first (the
// first match names the reason). They are addresses the controller can reach
// and a policy author, as a rule, cannot: the controller's own host and
// pod-local services (loopback, unspecified, which Linux routes to the host
// itself) and the cloud provider's instance metadata, which hands out the
// node's credentials (the link-local ranges hold it on most clouds).
var forbidden = []forbiddenRange{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"}, // AWS, GCP, Azure, OCI, OpenStack...
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},  // AWS over IPv6
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata"}, // Alibaba Cloud
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
}

// DestinationError says the guard refused a webhook destination. It is a
// definitive failure of the step: the same URL is refused every time until
// the policy or the operator's flags change.
type DestinationError struct {
	// Addr is the refused address, or the URL's scheme when Reason is
	// about it.
	Addr string
	// Reason is loopback, link-local, cloud metadata, unspecified or
	// plain http.
	Reason string
}

func (e *DestinationError) Error() string {
	if e.Reason == reasonPlainHTTP {
		return "plain http is not allowed; use https, or allow it with --" + AllowHTTPFlag
	}
	return fmt.Sprintf("destination %s is not allowed: %s; allow it with --%s", e.Addr, e.Reason, AllowedCIDRsFlag)
}

const reasonPlainHTTP = "plain http"

// checkAddr refuses addr when it is in a forbidden range and in no allowed
// prefix. IPv4-mapped IPv6 addresses are judged as IPv4, and zones are
// ignored (a prefix never contains an address with a zone).
func checkAddr(addr netip.Addr, allowed []netip.Prefix) error {
	addr = addr.WithZone("").Unmap()
	for _, p := range allowed {
		if p.Contains(addr) {
			return nil
		}
	}
	for _, f := range forbidden {
		if f.prefix.Contains(addr) {
			return &DestinationError{Addr: addr.String(), Reason: f.why}
		}
	}
	return nil
}

// CheckWebhookDestination says, without connecting or resolving anything,
// whether a webhook step's destination is refused: a plain http:// URL
// without allowHTTP, or a URL whose host is a literal forbidden address (or
// localhost, which is loopback by definition) outside the allowed prefixes.
// A URL naming a host is checked again at each call, after resolution; this
// check is what can be known when the policy is served. The error is a
// *DestinationError, or a plain error for a URL that does not parse.
func CheckWebhookDestination(w *teardownv1alpha1.WebhookAction, allowHTTP bool, allowed []netip.Prefix) error {
	if w == nil {
		return nil
	}
	raw, err := webhookURL(w)
	if err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the webhook URL does not parse")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !allowHTTP {
			return &DestinationError{Addr: "http", Reason: reasonPlainHTTP}
		}
	default:
		return errors.New("the webhook URL must be http:// or https://")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		// RFC 6761: localhost names resolve to loopback. Refused unless
		// one of the loopback addresses is allowed.
		v4, v6 := checkAddr(netip.MustParseAddr("127.0.0.1"), allowed), checkAddr(netip.IPv6Loopback(), allowed)
		if v4 != nil && v6 != nil {
			return &DestinationError{Addr: host, Reason: "loopback"}
		}
		return nil
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return checkAddr(addr, allowed)
	}
	return nil
}

// checkDestination is CheckWebhookDestination with h's options.
func (h *HTTPClients) checkDestination(w *teardownv1alpha1.WebhookAction) error {
	return CheckWebhookDestination(w, h.opts.AllowHTTP, h.opts.AllowedCIDRs)
}

// CheckDestination is CheckWebhookDestination with the options the clients
// were made with.
func (h *HTTPClients) CheckDestination(w *teardownv1alpha1.WebhookAction) error {
	return h.checkDestination(w)
}

// Options returns the options the clients were made with.
func (h *HTTPClients) Options() WebhookOptions { return h.opts }

// guardedDialer returns the dialer of webhook calls: it refuses forbidden
// addresses in Control, that is after name resolution and before the
// connection is attempted (no packet is sent), for every address a name
// resolves to. Checking the address actually dialled, rather than the URL
// or an earlier lookup, is what defeats names that resolve to a forbidden
// address and DNS rebinding.
func guardedDialer(allowed []netip.Prefix) *net.Dialer {
	return &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				// Control is called with a numeric host:port for tcp; refuse
				// anything else rather than guess.
				return &DestinationError{Addr: "a non-numeric address", Reason: "not an IP address"}
			}
			return checkAddr(ap.Addr(), allowed)
		},
	}
}

// dialContext is the transport's DialContext: the guarded dialer.
func dialContext(allowed []netip.Prefix) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return guardedDialer(allowed).DialContext
}

// CIDRs is a flag.Value of prefixes, repeated or comma-separated; a bare
// address is a one-address prefix.
type CIDRs []netip.Prefix

func (c *CIDRs) String() string {
	if c == nil {
		return ""
	}
	s := make([]string, len(*c))
	for i, p := range *c {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// Set adds the prefixes of a comma-separated list.
func (c *CIDRs) Set(v string) error {
	for f := range strings.SplitSeq(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil || a.Zone() != "" {
				return fmt.Errorf("%q is not a CIDR prefix such as 127.0.0.0/8 or an IP address", f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		*c = append(*c, p.Masked())
	}
	return nil
}

// Type names the value in pflag's help.
func (c *CIDRs) Type() string { return "cidrs" }
