/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// TestClassifyHost: every form of cluster DNS name, as the cluster's DNS
// server and a pod's resolver read it, with the absolute name a
// TeardownPolicy's call dials.
func TestClassifyHost(t *testing.T) {
	addr := netip.MustParseAddr
	for _, tc := range []struct {
		host, domain string
		want         Host
	}{
		// Services: every completion the search path offers.
		{host: "internal.victim", want: Host{Kind: HostService, Service: "internal", Namespace: "victim", Dial: "internal.victim.svc.cluster.local."}},
		{host: "internal.victim.svc", want: Host{Kind: HostService, Service: "internal", Namespace: "victim", Dial: "internal.victim.svc.cluster.local."}},
		{host: "internal.victim.svc.cluster.local", want: Host{Kind: HostService, Service: "internal", Namespace: "victim", Dial: "internal.victim.svc.cluster.local."}},
		{host: "internal.victim.svc.cluster.local.", want: Host{Kind: HostService, Service: "internal", Namespace: "victim", Dial: "internal.victim.svc.cluster.local."}},
		{host: "Internal.VICTIM.Svc.Cluster.Local.", want: Host{Kind: HostService, Service: "internal", Namespace: "victim", Dial: "internal.victim.svc.cluster.local."}},
		// Another cluster domain.
		{host: "hook.shop.svc.corp.example", domain: "corp.example", want: Host{Kind: HostService, Service: "hook", Namespace: "shop", Dial: "hook.shop.svc.corp.example."}},
		{host: "hook.shop.svc", domain: ".Corp.Example.", want: Host{Kind: HostService, Service: "hook", Namespace: "shop", Dial: "hook.shop.svc.corp.example."}},
		{host: "hook.shop", domain: "corp.example", want: Host{Kind: HostService, Service: "hook", Namespace: "shop", Dial: "hook.shop.svc.corp.example."}},
		// With another cluster domain, cluster.local is just a relative name
		// of five labels.
		{host: "hook.shop.svc.cluster.local", domain: "corp.example", want: Host{Kind: HostOtherCluster}},
		// Absolute, with the svc zone but not the cluster domain: a name
		// outside the cluster.
		{host: "internal.victim.svc.", want: Host{Kind: HostExternal, Dial: "internal.victim.svc."}},

		// Per-pod names of a headless Service.
		{host: "db-0.db.victim", want: Host{Kind: HostEndpoint, Endpoint: "db-0", Service: "db", Namespace: "victim", Dial: "db-0.db.victim.svc.cluster.local."}},
		{host: "db-0.db.victim.svc", want: Host{Kind: HostEndpoint, Endpoint: "db-0", Service: "db", Namespace: "victim", Dial: "db-0.db.victim.svc.cluster.local."}},
		{host: "db-0.db.victim.svc.cluster.local", want: Host{Kind: HostEndpoint, Endpoint: "db-0", Service: "db", Namespace: "victim", Dial: "db-0.db.victim.svc.cluster.local."}},
		{host: "10-1-2-3.db.victim.svc.cluster.local.", want: Host{Kind: HostEndpoint, Endpoint: "10-1-2-3", Service: "db", Namespace: "victim", Dial: "10-1-2-3.db.victim.svc.cluster.local."}},
		// Three relative labels are a per-pod name to the resolver (under
		// svc.<domain>) before they are anything outside the cluster.
		{host: "hooks.example.com", want: Host{Kind: HostEndpoint, Endpoint: "hooks", Service: "example", Namespace: "com", Dial: "hooks.example.com.svc.cluster.local."}},

		// Pod addresses.
		{host: "10-1-2-3.victim.pod.cluster.local", want: Host{Kind: HostPod, Addr: addr("10.1.2.3"), Namespace: "victim", Dial: "10-1-2-3.victim.pod.cluster.local."}},
		{host: "10-1-2-3.victim.pod", want: Host{Kind: HostPod, Addr: addr("10.1.2.3"), Namespace: "victim", Dial: "10-1-2-3.victim.pod.cluster.local."}},
		{host: "fd00--1.victim.pod.cluster.local.", want: Host{Kind: HostPod, Addr: addr("fd00::1"), Namespace: "victim", Dial: "fd00--1.victim.pod.cluster.local."}},
		{host: "127-0-0-1.victim.pod", want: Host{Kind: HostPod, Addr: addr("127.0.0.1"), Namespace: "victim", Dial: "127-0-0-1.victim.pod.cluster.local."}},
		{host: "web.victim.pod.cluster.local", want: Host{Kind: HostOtherCluster}}, // not an address
		{host: "a.10-1-2-3.victim.pod.cluster.local", want: Host{Kind: HostOtherCluster}},

		// A single label: the resolver completes it in the controller's
		// namespace.
		{host: "internal", want: Host{Kind: HostShort}},
		{host: "INTERNAL", want: Host{Kind: HostShort}},
		// Absolute single label: a top-level name.
		{host: "internal.", want: Host{Kind: HostExternal, Dial: "internal."}},

		// Other names the cluster DNS may answer.
		{host: "victim.svc", want: Host{Kind: HostOtherCluster}},
		{host: "victim.svc.cluster.local", want: Host{Kind: HostOtherCluster}},
		{host: "svc.cluster.local", want: Host{Kind: HostOtherCluster}},
		{host: "cluster.local", want: Host{Kind: HostOtherCluster}},
		{host: "cluster.local.", want: Host{Kind: HostOtherCluster}},
		{host: "kubernetes.default.cluster.local", want: Host{Kind: HostOtherCluster}},
		{host: "a.b.c.d.svc.cluster.local", want: Host{Kind: HostOtherCluster}},
		{host: "x.pod", want: Host{Kind: HostOtherCluster}},
		{host: "hooks.eu.example.com", want: Host{Kind: HostOtherCluster}}, // relative, four labels
		{host: "a.b.c.d.e.f", want: Host{Kind: HostOtherCluster}},          // ndots reached: tried as written first, then under the search domains

		// Outside the cluster, written absolute.
		{host: "hooks.example.com.", want: Host{Kind: HostExternal, Dial: "hooks.example.com."}},
		{host: "Hooks.Example.COM.", want: Host{Kind: HostExternal, Dial: "hooks.example.com."}},

		// IP literals.
		{host: "10.1.2.3", want: Host{Kind: HostIP, Addr: addr("10.1.2.3")}},
		{host: "::ffff:10.1.2.3", want: Host{Kind: HostIP, Addr: addr("10.1.2.3")}},
		{host: "fe80::1%eth0", want: Host{Kind: HostIP, Addr: addr("fe80::1")}},
		// Not IP literals to Go: names (which inet_aton would read as
		// addresses), so dialled by absolute name.
		{host: "10.1.2", want: Host{Kind: HostEndpoint, Endpoint: "10", Service: "1", Namespace: "2", Dial: "10.1.2.svc.cluster.local."}},
		{host: "0x7f.1", want: Host{Kind: HostService, Service: "0x7f", Namespace: "1", Dial: "0x7f.1.svc.cluster.local."}},

		// Not DNS names of a cluster: wildcards, empty labels, underscores.
		{host: "", want: Host{Kind: HostInvalid}},
		{host: ".", want: Host{Kind: HostInvalid}},
		{host: "internal..victim", want: Host{Kind: HostInvalid}},
		{host: "internal.victim..", want: Host{Kind: HostInvalid}},
		{host: "*.victim.svc", want: Host{Kind: HostInvalid}},
		{host: "internal.*.svc.cluster.local", want: Host{Kind: HostInvalid}},
		{host: "_https._tcp.internal.victim.svc", want: Host{Kind: HostInvalid}},
		{host: "-a.victim", want: Host{Kind: HostInvalid}},
		{host: "bücher.victim", want: Host{Kind: HostInvalid}},
		{host: strings.Repeat("a", 64) + ".victim", want: Host{Kind: HostInvalid}},
	} {
		t.Run(tc.host, func(t *testing.T) {
			got := ClassifyHost(tc.host, tc.domain)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("ClassifyHost(%q, %q) (-want +got):\n%s", tc.host, tc.domain, diff)
			}
		})
	}
}

// TestCheckDestinationNamespace: what a TeardownPolicy of namespace "shop"
// may call, the four forms for namespace victim among the refused,
// the same forms for shop among the accepted; and that a
// ClusterTeardownPolicy ("" namespace) may call all of them.
func TestCheckDestinationNamespace(t *testing.T) {
	h := NewWebhookClients(WebhookOptions{})
	url := func(host string) *teardownv1alpha1.WebhookAction {
		return &teardownv1alpha1.WebhookAction{URL: ptr.To("https://" + host + "/cleanup")}
	}
	const rule = ": a TeardownPolicy calls only Services and pods of its own namespace"
	for _, tc := range []struct {
		w    *teardownv1alpha1.WebhookAction
		want string // "" means accepted
		ns   bool   // refused as outside the namespace (ClusterScopedKind)
		// exact: want is the whole message, not a part of it.
		exact bool
	}{
		// The forms, for another namespace.
		{w: url("internal.victim.svc"), ns: true, want: "webhook.url names a Service of namespace victim (host internal.victim.svc)" + rule, exact: true},
		{w: url("internal.victim"), ns: true, want: "webhook.url names a Service of namespace victim (host internal.victim)" + rule +
			"; write a name outside the cluster with a trailing dot (internal.victim.)", exact: true},
		{w: url("internal"), ns: true, want: "webhook.url host internal is a single label, which the cluster's resolver completes in the controller's namespace" +
			rule + "; write <service>.shop.svc", exact: true},
		{w: url("db-0.db.victim.svc.cluster.local"), ns: true, want: "webhook.url names a pod of the headless Service db of namespace victim (host db-0.db.victim.svc.cluster.local)" + rule, exact: true},
		{w: url("10-1-2-3.victim.pod.cluster.local"), ns: true, want: "webhook.url names a pod address of namespace victim (host 10-1-2-3.victim.pod.cluster.local)" + rule, exact: true},
		{w: url("INTERNAL.Victim.svc.cluster.local."), ns: true, want: "webhook.url names a Service of namespace victim (host internal.victim.svc.cluster.local.)" + rule, exact: true},
		{w: url("db-0.db.victim"), ns: true, want: "names a pod of the headless Service db of namespace victim"},
		{w: url("10-1-2-3.victim.pod"), ns: true, want: "names a pod address of namespace victim"},
		{w: url("internal.victim.svc:8443"), ns: true, want: "names a Service of namespace victim"},
		// The same forms, for its own namespace.
		{w: url("internal.shop.svc")},
		{w: url("internal.shop")},
		{w: url("db-0.db.shop.svc.cluster.local")},
		{w: url("10-1-2-3.shop.pod.cluster.local")},
		{w: url("Internal.Shop.SVC.cluster.local.")},
		{w: url("db-0.db.shop")},
		{w: &teardownv1alpha1.WebhookAction{Service: &teardownv1alpha1.ServiceReference{Namespace: "shop", Name: "hook"}}},
		// Names outside the cluster: absolute only.
		{w: url("hooks.example.com.")},
		{w: url("hooks.example.com"), ns: true, want: "names a pod of the headless Service example of namespace com (host hooks.example.com)" + rule +
			"; write a name outside the cluster with a trailing dot (hooks.example.com.)"},
		{w: url("hooks.eu.example.com"), ns: true, want: "webhook.url host hooks.eu.example.com is not the name of a Service or pod of namespace shop" + rule +
			"; write a name outside the cluster with a trailing dot (hooks.eu.example.com.)", exact: true},
		{w: url("example.com"), ns: true, want: "names a Service of namespace com (host example.com)"},
		// Other names in the cluster domain.
		{w: url("shop.svc.cluster.local"), ns: true, want: "is not the name of a Service or pod of namespace shop"},
		{w: url("kubernetes.default.svc"), ns: true, want: "names a Service of namespace default"},
		{w: url("x.any.svc.cluster.local"), ns: true, want: "is not the name of a Service or pod of namespace shop"},
		// Not a DNS name.
		{w: url("_x.shop.svc"), want: `webhook.url host "_x.shop.svc" is not a DNS name`},
		// IP literals: the address guard only.
		{w: url("10.1.2.3")},
		{w: url("[fd00::1]")},
		{w: url("127.0.0.1"), want: "destination 127.0.0.1 is not allowed: loopback"},
		// The scheme rule comes first.
		{w: &teardownv1alpha1.WebhookAction{URL: ptr.To("http://internal.victim.svc/")}, want: "plain http is not allowed"},
	} {
		name := ""
		if tc.w.URL != nil {
			name = *tc.w.URL
		} else {
			name = "service " + tc.w.Service.Name + "." + tc.w.Service.Namespace
		}
		t.Run(name, func(t *testing.T) {
			err := h.CheckDestination(tc.w, "shop")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want %q", tc.want)
			case tc.exact:
				if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("error = %q, want it to contain %q", err, tc.want)
			}
			if got := IsNamespaceRefusal(err); got != tc.ns {
				t.Errorf("IsNamespaceRefusal = %v, want %v", got, tc.ns)
			}
			var destErr *DestinationError
			if err != nil && !errors.As(err, &destErr) {
				t.Errorf("error %v is not a *DestinationError: a call would retry it", err)
			}
			// A ClusterTeardownPolicy calls anything the address guard
			// allows.
			clusterErr := h.CheckDestination(tc.w, "")
			if tc.want != "" && (tc.ns || strings.Contains(tc.want, "DNS name")) && clusterErr != nil {
				t.Errorf("a ClusterTeardownPolicy is refused: %v", clusterErr)
			}
		})
	}
}

// recordingDial is a base dialer that records what it is asked to dial
// and connects nowhere.
type recordingDial struct {
	mu    sync.Mutex
	addrs []string
}

var errNotConnecting = errors.New("test dialer: not connecting")

func (d *recordingDial) dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, addr)
	return nil, errNotConnecting
}

// TestAbsoluteDial: a TeardownPolicy's call resolves the absolute name of
// what its host names (no search domain can apply, the controller's
// namespace first among them); a ClusterTeardownPolicy's resolves the host
// as written, through the search path as before.
func TestAbsoluteDial(t *testing.T) {
	for _, tc := range []struct {
		host, domain string
		want         string // "" means refused before dialling
	}{
		{host: "hook.shop:443", want: "hook.shop.svc.cluster.local.:443"},
		{host: "hook.shop.svc:8443", want: "hook.shop.svc.cluster.local.:8443"},
		{host: "HOOK.shop.svc.cluster.local.:443", want: "hook.shop.svc.cluster.local.:443"},
		{host: "db-0.db.shop:443", want: "db-0.db.shop.svc.cluster.local.:443"},
		{host: "10-1-2-3.shop.pod:443", want: "10-1-2-3.shop.pod.cluster.local.:443"},
		{host: "hook.shop.svc:443", domain: "corp.example", want: "hook.shop.svc.corp.example.:443"},
		{host: "hooks.example.com.:443", want: "hooks.example.com.:443"},
		{host: "10.1.2.3:443", want: "10.1.2.3:443"},
		{host: "[fd00::1]:443", want: "[fd00::1]:443"},
		{host: "internal:443"},
		{host: "hooks.eu.example.com:443"},
		{host: "*.shop.svc:443"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			var rec recordingDial
			_, err := absoluteDial(tc.domain, rec.dial)(t.Context(), "tcp", tc.host)
			if tc.want == "" {
				var destErr *DestinationError
				if !errors.As(err, &destErr) || len(rec.addrs) != 0 {
					t.Fatalf("dialled %q (error %v), want a refusal before dialling", rec.addrs, err)
				}
				return
			}
			if diff := cmp.Diff([]string{tc.want}, rec.addrs); diff != "" {
				t.Errorf("dialled (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCallTimeNamespaceRefusal: a call refuses a host outside the policy's
// namespace although the policy version was served (a version served
// before this rule, resumed after a restart): a definitive failure, nothing
// dialled. Its own namespace's names are dialled by absolute name, and a
// ClusterTeardownPolicy's by the name as written.
func TestCallTimeNamespaceRefusal(t *testing.T) {
	cluster := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "c"}, Key: "x.io/y"}
	for _, tc := range []struct {
		host    string
		cluster bool
		want    string // the definitive failure; "" means dialled
		dialled string
	}{
		{host: "internal.victim.svc", want: "calling https://internal.victim.svc/cleanup: webhook.url names a Service of namespace victim (host internal.victim.svc)"},
		{host: "internal.victim", want: "webhook.url names a Service of namespace victim"},
		{host: "internal", want: "webhook.url host internal is a single label"},
		{host: "db-0.db.victim.svc.cluster.local", want: "webhook.url names a pod of the headless Service db of namespace victim"},
		{host: "10-1-2-3.victim.pod.cluster.local", want: "webhook.url names a pod address of namespace victim"},
		{host: "internal.ns", dialled: "internal.ns.svc.cluster.local.:443"},
		{host: "db-0.db.ns.svc", dialled: "db-0.db.ns.svc.cluster.local.:443"},
		{host: "internal.victim", cluster: true, dialled: "internal.victim:443"},
		{host: "internal", cluster: true, dialled: "internal:443"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			h := NewWebhookClients(WebhookOptions{})
			var rec recordingDial
			h.dial = rec.dial
			pol, target := webhookTarget() // a TeardownPolicy of namespace "ns"
			if tc.cluster {
				pol = cluster
			}
			u := "https://" + tc.host + "/cleanup"
			r := &Runner{HTTP: h}
			out := r.webhook(t.Context(), pol, pol.Key, teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To(u)}}, target)
			if tc.want != "" {
				if !out.definitive || !strings.Contains(out.message, tc.want) {
					t.Errorf("outcome = %+v, want a definitive failure containing %q", out, tc.want)
				}
				if len(rec.addrs) != 0 {
					t.Errorf("dialled %q", rec.addrs)
				}
				return
			}
			if out.definitive || !errors.Is(out.err, errNotConnecting) {
				t.Errorf("outcome = %+v, want the test dialer's transient error", out)
			}
			if len(rec.addrs) == 0 || rec.addrs[0] != tc.dialled {
				t.Errorf("dialled %q, want %q", rec.addrs, tc.dialled)
			}
		})
	}
}

// FuzzClassifyHost: hostile hosts never panic, and what is classified
// holds together: a name with a namespace has a DNS-valid absolute Dial
// name in the cluster domain that classifies the same way; a Dial name is
// absolute; the namespace rule accepts a name exactly when it names the
// policy's namespace or is an IP or an absolute outside name.
func FuzzClassifyHost(f *testing.F) {
	for _, seed := range []string{
		"internal", "internal.victim", "internal.victim.svc", "internal.victim.svc.cluster.local.", "db-0.db.victim.svc.cluster.local",
		"10-1-2-3.victim.pod.cluster.local", "hooks.example.com", "hooks.example.com.", "10.1.2.3", "[::1]", "fe80::1%eth0", "*.svc", "",
		".", "..", "a..b", "x.any.svc", "_srv._tcp.a.b.svc", "fd00--1.ns.pod", "Internal.VICTIM.SVC.", "cluster.local", "a.b.c.d.e.f.g",
	} {
		f.Add(seed, "cluster.local")
	}
	f.Add("hook.shop.svc.corp.example", "corp.example.")
	f.Fuzz(func(t *testing.T, host, domain string) {
		h := ClassifyHost(host, domain)
		switch h.Kind {
		case HostService, HostEndpoint, HostPod:
			if h.Namespace == "" || !strings.HasSuffix(h.Dial, "."+normalDomain(domain)+".") {
				t.Fatalf("ClassifyHost(%q, %q) = %+v: no namespace, or Dial outside the cluster domain", host, domain, h)
			}
			again := ClassifyHost(h.Dial, domain)
			if again.Kind != h.Kind || again.Namespace != h.Namespace || again.Dial != h.Dial {
				t.Fatalf("ClassifyHost(%q) = %+v, but its Dial name classifies as %+v", host, h, again)
			}
			if !validName(strings.TrimSuffix(h.Dial, ".")) {
				t.Fatalf("Dial %q is not a DNS name", h.Dial)
			}
		case HostExternal:
			if !strings.HasSuffix(h.Dial, ".") {
				t.Fatalf("ClassifyHost(%q) = %+v: external Dial not absolute", host, h)
			}
		default:
			if h.Dial != "" {
				t.Fatalf("ClassifyHost(%q) = %+v: a Dial name for a host a TeardownPolicy may not call by name", host, h)
			}
		}
		err := checkHostNamespace("webhook.url", host, "shop", domain)
		allowed := h.Kind == HostIP || h.Kind == HostExternal || h.Namespace == "shop"
		if (err == nil) != allowed {
			t.Fatalf("checkHostNamespace(%q) = %v, classified %+v", host, err, h)
		}
	})
}

// TestAbsoluteNameOverTLS: an outside name written with a trailing dot is
// called over TLS and verified against a certificate for the name without
// it (httptest's certificate is for example.com). The test's dialer sends
// the connection to the test server whatever the name.
func TestAbsoluteNameOverTLS(t *testing.T) {
	srv, hits := countingServer(t, true)
	h := NewWebhookClients(WebhookOptions{})
	var rec recordingDial
	h.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, _ = rec.dial(ctx, network, addr)
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	out := callWebhook(t, h, &teardownv1alpha1.WebhookAction{URL: ptr.To("https://Example.COM./cleanup"), CABundle: pemCert(t, srv)})
	if hits.Load() != 1 {
		t.Fatalf("the server was reached %d times, want 1 (outcome %+v)", hits.Load(), out)
	}
	if diff := cmp.Diff([]string{"example.com.:443"}, rec.addrs); diff != "" {
		t.Errorf("dialled (-want +got):\n%s", diff)
	}
}
