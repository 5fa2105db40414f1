/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestInUseWebhookTemplate: by default (inUseWebhook.enabled) the chart
// renders config/webhook/inuse's ValidatingWebhookConfiguration with the
// chart's CA and no matchConditions (the controller keeps them), the
// controller's --inuse-webhook flags, the webhook port and certificate, and
// not the attach webhook; inUseWebhook.failurePolicy sets the configuration
// and the flag together; inUseWebhook.enabled=false renders none of it.
func TestInUseWebhookTemplate(t *testing.T) {
	testenv.SkipShort(t)
	want := find(readConfig(t, "config/webhook/inuse/validatingwebhookconfiguration.yaml"), "ValidatingWebhookConfiguration", "teardown-refuse-new-uses")
	if want == nil {
		t.Fatal("config/webhook/inuse has no ValidatingWebhookConfiguration teardown-refuse-new-uses")
	}
	for _, tc := range []struct {
		name, failurePolicy string
		args                []string
	}{
		{name: "default", failurePolicy: "Ignore"},
		{name: "fail closed", failurePolicy: "Fail", args: []string{"--set", "inUseWebhook.failurePolicy=Fail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.args...)
			vwc := find(objs, "ValidatingWebhookConfiguration", "teardown-refuse-new-uses")
			if vwc == nil {
				t.Fatalf("no ValidatingWebhookConfiguration teardown-refuse-new-uses: %v", kinds(objs))
			}
			if find(objs, "MutatingWebhookConfiguration", "teardown-attach-finalizers") != nil {
				t.Error("the attach webhook is rendered although webhook.enabled is false")
			}
			h, wh := get(vwc, "webhooks", 0), get(want, "webhooks", 0)
			for _, f := range [][]any{{"name"}, {"clientConfig", "service"}, {"rules"}, {"namespaceSelector"}, {"sideEffects"},
				{"admissionReviewVersions"}, {"timeoutSeconds"}} {
				if !reflect.DeepEqual(get(h, f...), get(wh, f...)) {
					t.Errorf("%v = %v, config/webhook/inuse has %v", f, get(h, f...), get(wh, f...))
				}
			}
			if got := get(h, "matchConditions"); got != nil {
				t.Errorf("matchConditions = %v, want none: they are the controller's, which an upgrade must not reset", got)
			}
			if got := get(h, "failurePolicy"); got != tc.failurePolicy {
				t.Errorf("failurePolicy = %v, want %s", got, tc.failurePolicy)
			}
			secret := find(objs, "Secret", "teardown-controller-webhook-tls")
			if secret == nil || get(h, "clientConfig", "caBundle") != get(secret, "data", "ca.crt") {
				t.Error("caBundle is not the webhook Secret's CA")
			}
			if find(objs, "Service", "teardown-controller-webhook") == nil {
				t.Error("no webhook Service")
			}
			c := get(find(objs, "Deployment", "teardown-controller"), "spec", "template", "spec", "containers", 0)
			args := fmt.Sprint(get(c, "args"))
			for _, want := range []string{"--inuse-webhook ", "--inuse-webhook-failure-policy=" + tc.failurePolicy, "--unused-release-grace=5s",
				"--webhook-port=9443", "--webhook-cert-dir=/etc/teardown/webhook-certs"} {
				if !strings.Contains(args+" ", want) {
					t.Errorf("args %s lack %s", args, want)
				}
			}
			if strings.Contains(args, "attach-webhook") {
				t.Errorf("args %s turn the attach webhook on", args)
			}
			if get(c, "volumeMounts", 0, "name") != "webhook-certs" {
				t.Errorf("the serving certificate is not mounted: %v", get(c, "volumeMounts"))
			}
		})
	}
	t.Run("opted out", func(t *testing.T) {
		objs := render(t, "--set", "inUseWebhook.enabled=false")
		for _, o := range [][2]string{{"ValidatingWebhookConfiguration", "teardown-refuse-new-uses"}, {"Service", "teardown-controller-webhook"},
			{"Secret", "teardown-controller-webhook-tls"}} {
			if find(objs, o[0], o[1]) != nil {
				t.Errorf("%s %s rendered although inUseWebhook.enabled=false", o[0], o[1])
			}
		}
		args := fmt.Sprint(get(find(objs, "Deployment", "teardown-controller"), "spec", "template", "spec", "containers", 0, "args"))
		if strings.Contains(args, "--inuse-webhook") || strings.Contains(args, "--webhook-port") {
			t.Errorf("args %s serve the in-use webhook although inUseWebhook.enabled=false", args)
		}
	})
}
