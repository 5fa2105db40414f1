/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// MutatingWebhook is a mutating webhook served on 127.0.0.1 with a
// self-signed certificate and registered with the API server by URL, as
// InstallMutatingWebhook left it.
type MutatingWebhook struct {
	// Server is the webhook server to give the manager
	// (controller.ManagerOptions.WebhookServer).
	Server ctrlwebhook.Server
	// Host is https://127.0.0.1:PORT, where Server listens.
	Host string
	// CA is the PEM certificate Server's certificate verifies with.
	CA []byte
}

// InstallMutatingWebhook picks a free loopback port, writes a self-signed
// serving certificate for 127.0.0.1 into dir/webhook-certs, and creates (or
// replaces) the MutatingWebhookConfiguration name with one webhook per
// entry of webhooks, each calling Host+path, failing open, with no rules
// (the controller fills them in from its policies) and, as config/webhook,
// never in kube-system nor teardown-system. It takes no internal package
// (the webhooks' names and path are the caller's) so that any test may use
// it.
func InstallMutatingWebhook(ctx context.Context, c client.Client, dir, name, path string, webhooks []string) (*MutatingWebhook, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return nil, fmt.Errorf("generating the webhook's certificate: %w", err)
	}
	certDir := filepath.Join(dir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	w := &MutatingWebhook{Host: fmt.Sprintf("https://127.0.0.1:%d", port), CA: certPEM}
	url := w.Host + path
	fail, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, hook := range webhooks {
		mwc.Webhooks = append(mwc.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: hook, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: certPEM},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem, "teardown-system"},
			}}},
		})
	}
	// A configuration left by an earlier process names a port and CA that
	// are gone: replace it.
	if err := c.Delete(ctx, mwc.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deleting MutatingWebhookConfiguration %s: %w", name, err)
	}
	if err := c.Create(ctx, mwc); err != nil {
		return nil, fmt.Errorf("creating MutatingWebhookConfiguration %s: %w", name, err)
	}
	w.Server = ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	return w, nil
}
