/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ClusterDomainFlag names the controller flag that gives the cluster's DNS
// domain (the kubelet's --cluster-domain).
const ClusterDomainFlag = "cluster-domain"

// DefaultClusterDomain is the kubelet's default cluster domain.
const DefaultClusterDomain = "cluster.local"

// HostKind is what a webhook URL's host names, read the way the cluster's
// DNS server (CoreDNS' kubernetes plugin, kube-dns) and a pod's resolver
// (search <ns>.svc.<domain> svc.<domain> <domain>, ndots:5) read it.
type HostKind string

// The kinds of host.
const (
	// HostIP is an IP literal: the address guard judges it, nothing else.
	HostIP HostKind = "IP"
	// HostService is <service>.<namespace>, <service>.<namespace>.svc or
	// <service>.<namespace>.svc.<domain>.
	HostService HostKind = "Service"
	// HostEndpoint is one pod of a headless Service:
	// <hostname or dashed IP>.<service>.<namespace>[.svc[.<domain>]].
	HostEndpoint HostKind = "Endpoint"
	// HostPod is a pod's address: <dashed IP>.<namespace>.pod[.<domain>].
	HostPod HostKind = "Pod"
	// HostShort is a single label, which the resolver completes in the
	// namespace of the pod that resolves it: the controller's.
	HostShort HostKind = "Short"
	// HostOtherCluster is a name the cluster's DNS may answer that is
	// none of the above: a name in the cluster domain of another shape, or
	// a relative name of four labels or more (tried under every search
	// domain before it is tried as written).
	HostOtherCluster HostKind = "OtherCluster"
	// HostExternal is an absolute name (written with a trailing dot)
	// outside the cluster domain: resolved as written, never through the
	// search domains.
	HostExternal HostKind = "External"
	// HostInvalid is not a DNS name of lower-case letters, digits and '-'.
	HostInvalid HostKind = "Invalid"
)

// Host is a classified webhook host.
type Host struct {
	Kind HostKind
	// Namespace, Service and Endpoint are the parts of a Service, Endpoint
	// or Pod name.
	Namespace, Service, Endpoint string
	// Addr is the address of an IP literal or of a pod name.
	Addr netip.Addr
	// Dial is the absolute name (with a trailing dot) that names exactly
	// what the host names, with no search domain applying: what the
	// controller resolves for a TeardownPolicy. Empty for IP literals and
	// for hosts a TeardownPolicy may not call by name.
	Dial string
}

// ClassifyHost reads a URL's host (as url.URL.Hostname returns it) as a
// cluster DNS name, for a cluster whose domain is domain (empty means
// DefaultClusterDomain). It never resolves anything. Case and one trailing
// dot are meaningful only as DNS gives them meaning: names are compared in
// lower case, and a trailing dot makes a name absolute.
func ClassifyHost(host, domain string) Host {
	if addr, err := netip.ParseAddr(host); err == nil {
		return Host{Kind: HostIP, Addr: addr.WithZone("").Unmap()}
	}
	domain = normalDomain(domain)
	name := strings.ToLower(host)
	absolute := strings.HasSuffix(name, ".")
	name = strings.TrimSuffix(name, ".")
	if !validName(name) {
		return Host{Kind: HostInvalid}
	}
	labels := strings.Split(name, ".")
	var rest []string
	zone := ""
	switch {
	case strings.HasSuffix(name, "."+domain) || name == domain:
		// In the cluster domain, absolute or not. (Relative, it would be
		// tried under the search domains first; a TeardownPolicy's names
		// are dialled absolute, so that never happens.)
		inDomain := labels[:len(labels)-strings.Count(domain, ".")-1]
		if len(inDomain) == 0 {
			return Host{Kind: HostOtherCluster}
		}
		zone, rest = inDomain[len(inDomain)-1], inDomain[:len(inDomain)-1]
		if zone != "svc" && zone != "pod" {
			return Host{Kind: HostOtherCluster}
		}
	case absolute:
		return Host{Kind: HostExternal, Dial: name + "."}
	case labels[len(labels)-1] == "svc" || labels[len(labels)-1] == "pod":
		// <...>.svc and <...>.pod complete with the search domain <domain>.
		zone, rest = labels[len(labels)-1], labels[:len(labels)-1]
	case len(labels) == 1:
		return Host{Kind: HostShort}
	case len(labels) <= 3:
		// <service>.<namespace> and <pod>.<service>.<namespace> complete
		// with the search domain svc.<domain>. (The controller's own
		// namespace comes first in the search path, where the same
		// labels would name a pod of a Service of the controller's
		// namespace: which is why a TeardownPolicy's names are dialled
		// absolute.)
		zone, rest = "svc", labels
	default:
		return Host{Kind: HostOtherCluster}
	}
	h := classifyInZone(zone, rest, domain)
	if len(h.Dial) > 254 {
		// Completed, the name no longer fits in DNS.
		return Host{Kind: HostInvalid}
	}
	return h
}

// classifyInZone reads the labels before svc.<domain> or pod.<domain>.
func classifyInZone(zone string, rest []string, domain string) Host {
	switch {
	case zone == "svc" && len(rest) == 2:
		h := Host{Kind: HostService, Service: rest[0], Namespace: rest[1]}
		h.Dial = h.Service + "." + h.Namespace + ".svc." + domain + "."
		return h
	case zone == "svc" && len(rest) == 3:
		h := Host{Kind: HostEndpoint, Endpoint: rest[0], Service: rest[1], Namespace: rest[2]}
		h.Dial = h.Endpoint + "." + h.Service + "." + h.Namespace + ".svc." + domain + "."
		return h
	case zone == "pod" && len(rest) == 2:
		addr, ok := dashedAddr(rest[0])
		if !ok {
			return Host{Kind: HostOtherCluster}
		}
		return Host{Kind: HostPod, Addr: addr, Namespace: rest[1], Dial: rest[0] + "." + rest[1] + ".pod." + domain + "."}
	}
	return Host{Kind: HostOtherCluster}
}

// normalDomain is the cluster domain in lower case without dots around it;
// DefaultClusterDomain for an empty one, or one that is not a DNS name
// (which the controller refuses at start: ValidateClusterDomain).
func normalDomain(domain string) string {
	domain = strings.Trim(strings.ToLower(domain), ".")
	if !validName(domain) {
		return DefaultClusterDomain
	}
	return domain
}

// ValidateClusterDomain checks the value of --cluster-domain.
func ValidateClusterDomain(domain string) error {
	d := strings.Trim(strings.ToLower(domain), ".")
	if !validName(d) {
		return fmt.Errorf("--%s %q is not a DNS name", ClusterDomainFlag, domain)
	}
	return nil
}

// validName: every label is a DNS-1123 label (which leaves out '*', '_' and
// empty labels) and the name fits in DNS.
func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for l := range strings.SplitSeq(name, ".") {
		if len(validation.IsDNS1123Label(l)) > 0 {
			return false
		}
	}
	return true
}

// dashedAddr parses the address of a pod name: 10-1-2-3, or an IPv6
// address with ':' written '-'.
func dashedAddr(label string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ".")); err == nil && a.Is4() {
		return a, true
	}
	if a, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ":")); err == nil && a.Is6() {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// wildcardNamespace: CoreDNS before 1.9 read "any" (and "*") as every
// namespace.
func wildcardNamespace(ns string) bool { return ns == "any" || ns == "*" }

// checkHostNamespace refuses a host that a TeardownPolicy of namespace ns
// may not call; field (webhook.url or webhook.service) names where the host
// came from. The rule: an IP literal is left to the address guard; an
// absolute name outside the cluster domain is allowed (it is dialled as
// written); every other name must be a Service, a pod of a headless
// Service, or a pod address of namespace ns. A relative name is what the
// cluster's resolver would make of it, never "probably external".
func checkHostNamespace(field, host, ns, domain string) error {
	h := ClassifyHost(host, domain)
	refuse := func(reason, detail string) error {
		return &DestinationError{Addr: strings.ToLower(host), Reason: reason, Field: field, Detail: detail, Namespace: ns,
			Relative: mayBeMeantOutside(host, h, domain)}
	}
	switch h.Kind {
	case HostIP, HostExternal:
		return nil
	case HostInvalid:
		return refuse(reasonBadName, "")
	case HostShort:
		return refuse(reasonShortName, "")
	case HostOtherCluster:
		return refuse(reasonNotInNamespace, "")
	}
	if wildcardNamespace(h.Namespace) {
		return refuse(reasonNotInNamespace, "")
	}
	if h.Namespace == ns {
		return nil
	}
	switch h.Kind {
	case HostService:
		return refuse(reasonOtherNamespace, "a Service of namespace "+h.Namespace)
	case HostEndpoint:
		return refuse(reasonOtherNamespace, "a pod of the headless Service "+h.Service+" of namespace "+h.Namespace)
	default:
		return refuse(reasonOtherNamespace, "a pod address of namespace "+h.Namespace)
	}
}

// mayBeMeantOutside: host, refused as h, is a relative name of two labels
// or more that does not end in svc, pod or the cluster domain, so it may
// have been meant as a name outside the cluster, which is written with a
// trailing dot.
func mayBeMeantOutside(host string, h Host, domain string) bool {
	if strings.HasSuffix(host, ".") || h.Kind == HostShort || h.Kind == HostInvalid {
		return false
	}
	labels := strings.Split(strings.ToLower(host), ".")
	last := labels[len(labels)-1]
	return last != "svc" && last != "pod" && ClassifyHost(host+".", domain).Kind == HostExternal
}

// namespaceError says why a TeardownPolicy may not call a host, and how
// to write what it may call.
func (e *DestinationError) namespaceError() string {
	const rule = "a TeardownPolicy calls only Services and pods of its own namespace"
	var msg string
	switch e.Reason {
	case reasonOtherNamespace:
		msg = fmt.Sprintf("%s names %s (host %s): %s", e.Field, e.Detail, e.Addr, rule)
	case reasonShortName:
		return fmt.Sprintf("%s host %s is a single label, which the cluster's resolver completes in the controller's namespace: %s; write <service>.%s.svc",
			e.Field, e.Addr, rule, e.Namespace)
	case reasonNotInNamespace:
		ns := "namespace " + e.Namespace
		if e.Namespace == "" {
			ns = "the policy's namespace"
		}
		msg = fmt.Sprintf("%s host %s is not the name of a Service or pod of %s: %s", e.Field, e.Addr, ns, rule)
	default:
		return fmt.Sprintf("%s host %q is not a DNS name of lower-case letters, digits and '-'", e.Field, e.Addr)
	}
	if e.Relative {
		// The name may have been meant as a name outside the cluster: the
		// cluster's resolver would try it under its search domains first.
		msg += fmt.Sprintf("; write a name outside the cluster with a trailing dot (%s.)", e.Addr)
	}
	return msg
}

// IsNamespaceRefusal says whether err refuses a TeardownPolicy's host for
// naming something outside its namespace (rather than for its scheme or
// address, or for not being a DNS name).
func IsNamespaceRefusal(err error) bool {
	var d *DestinationError
	if !errors.As(err, &d) {
		return false
	}
	return d.Reason == reasonOtherNamespace || d.Reason == reasonShortName || d.Reason == reasonNotInNamespace
}
