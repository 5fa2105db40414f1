/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"bytes"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/chart"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestSelfSignedCertificateOffline: rendered without a cluster (helm
// template, as Argo CD renders), lookup finds no Secret and each render
// makes a new CA. This is the limit docs/helm.md "Argo CD" answers with
// webhook.certManager; with cert-manager the render holds no key at all.
// TestInstall shows that with the cluster (helm upgrade, Flux) the
// certificate is kept.
func TestSelfSignedCertificateOffline(t *testing.T) {
	testenv.SkipShort(t)
	ca := func(args ...string) any {
		objs := render(t, append([]string{"--set", "webhook.enabled=true"}, args...)...)
		return get(find(objs, "Secret", "teardown-controller-webhook-tls"), "data", "ca.crt")
	}
	if a, b := ca(), ca(); a == nil || a == b {
		t.Errorf("two offline renders gave CAs %.20v and %.20v; want two new ones (lookup cannot see a cluster)", a, b)
	}
	if got := ca("--set", "webhook.certManager.enabled=true"); got != nil {
		t.Errorf("with cert-manager the chart still renders its own CA %.20v", got)
	}
}

// upgradeKeepsWebhookCertificate: with the cluster at hand (helm upgrade, as
// Flux's helm-controller runs it) the chart's lookup finds the webhook
// Secret and keeps its CA and certificate, and both webhook configurations
// still trust it. Called by TestInstall right after an install with
// nonDefault values (webhook.enabled, self-signed).
func (c *cluster) upgradeKeepsWebhookCertificate(valuesArgs ...string) {
	t := c.t
	read := func() (*corev1.Secret, []byte) {
		s := &corev1.Secret{}
		if err := c.admin.Get(t.Context(), client.ObjectKey{Namespace: releaseNS, Name: "teardown-controller-webhook-tls"}, s); err != nil {
			t.Fatalf("the webhook Secret: %v", err)
		}
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.admin.Get(t.Context(), client.ObjectKey{Name: "teardown-attach-finalizers"}, mwc); err != nil {
			t.Fatalf("the attach webhook: %v", err)
		}
		return s, mwc.Webhooks[0].ClientConfig.CABundle
	}
	before, _ := read()
	c.helm(append([]string{"upgrade", releaseName, chart.Dir, "-n", releaseNS}, valuesArgs...)...)
	after, caBundle := read()
	for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if len(before.Data[k]) == 0 || !bytes.Equal(before.Data[k], after.Data[k]) {
			t.Errorf("helm upgrade changed the webhook Secret's %s", k)
		}
	}
	if !bytes.Equal(caBundle, after.Data["ca.crt"]) {
		t.Error("after helm upgrade the attach webhook's caBundle is not the Secret's CA")
	}
}
