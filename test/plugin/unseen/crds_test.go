/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// twoVersionCRD creates a namespaced CRD group/Kind with v1alpha1 (the
// storage version) and v1 (served, and preferred by discovery), converted
// by None, and waits until it is served. Objects created at v1alpha1 stay
// stored at it: a read at v1 has to convert them.
func twoVersionCRD(t *testing.T, group, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return newCRD(t, group, kind, plural, "v1alpha1", "v1")
}

// newCRD creates a namespaced CRD serving versions, the first one stored,
// and waits until the last one is served.
func newCRD(t *testing.T, group, kind, plural string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ax := apiextensionsclient.NewForConfigOrDie(restConfig)
	schemaAny := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: kindLower(kind)}}}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0, Schema: schemaAny})
	}
	last := versions[len(versions)-1]
	got, err := ax.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "CRD "+crd.Name+" established", func(ctx context.Context) (bool, error) {
		c, err := ax.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				_, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: last, Resource: plural}).List(ctx, metav1.ListOptions{})
				return err == nil, nil
			}
		}
		return false, nil
	})
	return got
}

func kindLower(k string) string {
	b := []byte(k)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// setConversion replaces the CRD's conversion.
func setConversion(t *testing.T, name string, conv *apiextensionsv1.CustomResourceConversion) {
	t.Helper()
	ax := apiextensionsclient.NewForConfigOrDie(restConfig)
	for {
		c, err := ax.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Spec.Conversion = conv
		_, err = ax.ApiextensionsV1().CustomResourceDefinitions().Update(t.Context(), c, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
}

// webhookConversion is a conversion through clientConfig.
func webhookConversion(cc apiextensionsv1.WebhookClientConfig) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &cc, ConversionReviewVersions: []string{"v1"}}}
}

// stuckObject creates an object of the CRD at v1alpha1 with finalizers,
// written by manager, and deletes it: it stays Terminating.
func stuckObject(t *testing.T, group, kind, plural, ns, name, manager string, finalizers ...string) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: plural}
	fins := make([]any, len(finalizers))
	for i, f := range finalizers {
		fins[i] = f
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "finalizers": fins}, "spec": map[string]any{"size": "small"}}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(gvr).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
}

// otherCA is the PEM of a fresh self-signed CA that signed nothing the
// scenarios serve.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-the-webhook-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// conversionServer is an HTTPS conversion webhook on 127.0.0.1 answering
// with handler; it returns its URL and the PEM of its certificate (its
// own CA).
func conversionServer(t *testing.T, handler http.HandlerFunc) (string, []byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return fmt.Sprintf("%s/convert", srv.URL), ca
}
