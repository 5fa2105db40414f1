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
	"github.com/teardown-dev/teardown/internal/policy"
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
	// ClusterDomain is the cluster's DNS domain (--cluster-domain); empty
	// means cluster.local. It is how the names a TeardownPolicy may call
	// are read (webhook_dns.go).
	ClusterDomain string
	// Proxy, when set (--webhook-proxy, ParseWebhookProxy), is the HTTP
	// proxy of calls to IP addresses and absolute outside names
	// (webhook_proxy.go). No proxy is ever taken from the environment.
	Proxy *url.URL
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
	// Addr is the refused address or host, or the URL's scheme when Reason
	// is about it.
	Addr string
	// Reason is loopback, link-local, cloud metadata, unspecified or
	// plain http; or, for a TeardownPolicy's host (webhook_dns.go), other
	// namespace, short name, not in namespace or bad name.
	Reason string

	// Field, Detail, Namespace and Relative say more about a
	// TeardownPolicy's host: the field it came from (webhook.url or
	// webhook.service), what it names, the policy's namespace, and whether
	// it was written without a trailing dot.
	Field, Detail, Namespace string
	Relative                 bool
}

func (e *DestinationError) Error() string {
	switch e.Reason {
	case reasonPlainHTTP:
		return "plain http is not allowed; use https, or allow it with --" + AllowHTTPFlag
	case reasonOtherNamespace, reasonShortName, reasonNotInNamespace, reasonBadName:
		return e.namespaceError()
	}
	return fmt.Sprintf("destination %s is not allowed: %s; allow it with --%s", e.Addr, e.Reason, AllowedCIDRsFlag)
}

// Reasons of a DestinationError.
const (
	reasonPlainHTTP      = "plain http"
	reasonOtherNamespace = "other namespace"
	reasonShortName      = "short name"
	reasonNotInNamespace = "not in namespace"
	reasonBadName        = "bad name"
)

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

// CheckDestination is CheckWebhookDestination with the options the clients
// were made with and, for a TeardownPolicy of namespace ns (ns is "" for a
// ClusterTeardownPolicy), the namespace rule of webhook_dns.go: its host
// must be an IP literal, an absolute name outside the cluster domain, or a
// name of a Service or pod of ns. It is called when the policy is served and
// again before every call, since a call may run a policy version served
// before this rule (a restart resumes teardowns under the version that
// guarded them).
func (h *HTTPClients) CheckDestination(w *teardownv1alpha1.WebhookAction, ns string) error {
	if err := CheckWebhookDestination(w, h.opts.AllowHTTP, h.opts.AllowedCIDRs); err != nil || w == nil || ns == "" {
		return err
	}
	raw, err := webhookURL(w)
	if err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the webhook URL does not parse")
	}
	field := "webhook.url"
	if w.URL == nil {
		field = "webhook.service"
	}
	return checkHostNamespace(field, u.Hostname(), ns, h.opts.ClusterDomain)
}

// WebhookNamespace is the namespace whose rule a policy's webhook calls
// follow (CheckDestination): a TeardownPolicy's, or "" for a
// ClusterTeardownPolicy, which may call anything the address guard allows.
func WebhookNamespace(pol *policy.Policy) string {
	if pol.Ref.Kind == policy.KindNamespaced {
		return pol.Ref.Namespace
	}
	return ""
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

// dialFunc is a transport's DialContext.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialContext is the transport's DialContext: the guarded dialer.
func dialContext(allowed []netip.Prefix) dialFunc {
	return guardedDialer(allowed).DialContext
}

// absoluteDial is the DialContext of TeardownPolicies' calls: it dials the
// absolute name of what the host names (ClassifyHost's Dial), so the
// resolver never applies its search domains, of which the first is the
// controller's own namespace. The name dialled is then the name the
// namespace rule judged, whatever the search path and ndots. A host with no
// such name (a single label, a relative name of four labels or more, a name
// that is not DNS) is refused: CheckDestination refuses those before the
// call, so this is only reached by a call that skipped it. The URL, the TLS
// server name and the Host header are left as written.
func absoluteDial(domain string, base dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dialling %s: %w", addr, err)
		}
		h := ClassifyHost(host, domain)
		switch {
		case h.Kind == HostIP:
			return base(ctx, network, addr)
		case h.Dial == "":
			return nil, &DestinationError{Addr: host, Reason: reasonNotInNamespace, Field: "webhook.url", Relative: mayBeMeantOutside(host, h, domain)}
		}
		return base(ctx, network, net.JoinHostPort(h.Dial, port))
	}
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
