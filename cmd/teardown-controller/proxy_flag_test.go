/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"strings"
	"testing"
)

// TestRefusedWebhookProxyStopsTheStart: a --webhook-proxy the destination
// guard refuses (the cloud metadata address; loopback without
// --webhook-allowed-cidrs) exits 2 at once with the reason and the flag to
// allow it, before any cluster is contacted. The control: the same loopback
// proxy with 127.0.0.0/8 allowed passes, and the start stops at the next
// flag checked (a bad --diagnose-kinds), not at the proxy.
func TestRefusedWebhookProxyStopsTheStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"--webhook-proxy=http://169.254.169.254:80", "--webhook-allowed-cidrs=127.0.0.0/8"},
			want: "teardown-controller: --webhook-proxy=http://169.254.169.254:80: the webhook proxy 169.254.169.254 is not allowed: cloud metadata (169.254.169.254); allow it with --webhook-allowed-cidrs"},
		{args: []string{"--webhook-proxy=http://127.0.0.1:3128"},
			want: "teardown-controller: --webhook-proxy=http://127.0.0.1:3128: the webhook proxy 127.0.0.1 is not allowed: loopback (127.0.0.1); allow it with --webhook-allowed-cidrs"},
		{args: []string{"--webhook-proxy=socks5://proxy:1080"},
			want: "teardown-controller: --webhook-proxy=socks5://proxy:1080: the proxy URL must be http:// or https://"},
		{args: []string{"--webhook-proxy=http://127.0.0.1:3128", "--webhook-allowed-cidrs=127.0.0.0/8", "--diagnose-kinds=Not A Kind!"},
			want: "--diagnose-kinds"},
	} {
		code, out := runMain(t, tc.args...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("teardown-controller %v: exit %d, want 2 and %q; output:\n%s", tc.args, code, tc.want, out)
		}
		if strings.Contains(tc.want, "--diagnose-kinds") && strings.Contains(out, "webhook proxy") {
			t.Errorf("teardown-controller %v refused an allowed proxy:\n%s", tc.args, out)
		}
	}
}
