/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"net/http"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// Family 3 of issue 20: an object that cannot be read. Each scenario stores
// an object at v1alpha1 of a CRD whose preferred version is v1, so that
// every read at v1 (kubectl's, explain's, its operator's, the namespace
// controller's) goes through the CRD's conversion, and then breaks that
// conversion the way a thread reports it.

// The conversion webhook's Service is gone with its namespace: the e2e
// suite's crd-webhook namespaces stuck terminating with "conversion
// webhook for stable.example.com/v1 ... failed: Post ...: service
// \"e2e-test-crd-conversion-webhook\" not found"
// (https://github.com/kubernetes/kubernetes/issues/118357). Explain of the
// object and of its namespace names the webhook and its missing Service,
// says reads and writes still work at v1alpha1, and goes on to the
// finalizer's owner from the object as read there.
func TestUnreadableConversionServiceGone(t *testing.T) {
	needCluster(t)
	const group, kind, plural = "stable.unseen-a.test", "CronTab", "crontabs"
	crd := twoVersionCRD(t, group, kind, plural)
	ns := plugintest.NewNamespace(t, cs, "crd-webhook")
	stuckObject(t, group, kind, plural, ns, "nightly", "crontab-operator", "stable.unseen-a.test/cleanup")
	setConversion(t, crd.Name, webhookConversion(apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
		Namespace: "crd-webhook-gone", Name: "e2e-test-crd-conversion-webhook", Path: ptr.To("/crdconvert"), Port: ptr.To[int32](9443)}}))

	target := []string{plural + "." + group + "/nightly", "-n", ns}
	var rep *report
	testenv.Eventually(t, 30*time.Second, "the conversion to fail", func(context.Context) (bool, error) {
		rep = explain(t, target...)
		return rep.Unreadable, nil
	})
	f := root(t, rep, "ConversionWebhookFailing")
	mustContain(t, "message", f.Message, "Service crd-webhook-gone/e2e-test-crd-conversion-webhook", "does not exist", "reading works at v1alpha1 only", "writing and removing finalizers work at v1alpha1")
	mustContain(t, "remedy", f.Remedy, "reinstall the webhook's backend")
	if got := dump(rep.Access); len(rep.Access) != 2 || rep.Access[0].Version != "v1" || rep.Access[0].Read == "ok" || rep.Access[1].Read != "ok" || rep.Access[1].Write != "ok" {
		t.Errorf("access = %s, want v1 blocked and v1alpha1 read and written", got)
	}
	// The rest of the report, from the object as read at v1alpha1.
	if fd := find(rep, "stable.unseen-a.test/cleanup"); fd == nil || fd.Owner == nil {
		t.Errorf("no finding for the object's finalizer, read at v1alpha1:\n%s", dump(rep.Findings))
	}

	// Its namespace cannot be emptied either: the namespace controller
	// lists crontabs at v1.
	if err := cs.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	nsRep := explain(t, "namespace/"+ns)
	nf := root(t, nsRep, "ConversionWebhookFailing")
	mustContain(t, "namespace message", nf.Message, "listing crontabs."+group+" fails", "Service crd-webhook-gone/e2e-test-crd-conversion-webhook does not exist")
	if nf.Object == nil || nf.Object.Name != crd.Name {
		t.Errorf("object = %+v, want CRD %s", nf.Object, crd.Name)
	}
}

// The conversion webhook runs, but the CRD's caBundle does not trust its
// certificate: "conversion webhook for cert-manager.io/v1alpha2,
// Kind=Certificate failed: Post https://cert-manager-webhook...: x509:
// certificate signed by unknown authority"
// (https://github.com/cert-manager/cert-manager/issues/3430; also
// https://github.com/sigstore/policy-controller/issues/1227).
func TestUnreadableConversionUntrustedCertificate(t *testing.T) {
	needCluster(t)
	const group, kind, plural = "cert.unseen-b.test", "Certificate", "certificates"
	crd := twoVersionCRD(t, group, kind, plural)
	ns := plugintest.NewNamespace(t, cs, "certs")
	stuckObject(t, group, kind, plural, ns, "shop-tls", "cert-controller", "cert.unseen-b.test/secret-cleanup")
	url, _ := conversionServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	setConversion(t, crd.Name, webhookConversion(apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: otherCA(t)}))

	target := []string{plural + "." + group + "/shop-tls", "-n", ns}
	var rep *report
	testenv.Eventually(t, 30*time.Second, "the conversion to fail", func(context.Context) (bool, error) {
		rep = explain(t, target...)
		return rep.Unreadable, nil
	})
	f := root(t, rep, "ConversionWebhookFailing")
	mustContain(t, "message", f.Message, "URL "+url, "x509", "not trusted by the CRD's spec.conversion.webhook.clientConfig.caBundle")
	mustContain(t, "remedy", f.Remedy, "caBundle")
}

// The conversion webhook answers, with nothing: "conversion webhook for
// authorino.kuadrant.io/v1beta1, Kind=AuthConfig failed: 0-length response
// with status code: 200" (https://github.com/Kuadrant/authorino/issues/429).
// It is running and trusted: the fault is in what it answers.
func TestUnreadableConversionEmptyAnswer(t *testing.T) {
	needCluster(t)
	const group, kind, plural = "authorino.unseen-c.test", "AuthConfig", "authconfigs"
	crd := twoVersionCRD(t, group, kind, plural)
	ns := plugintest.NewNamespace(t, cs, "auth")
	stuckObject(t, group, kind, plural, ns, "talker-api", "authorino", "authorino.unseen-c.test/capabilities")
	url, ca := conversionServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
	})
	setConversion(t, crd.Name, webhookConversion(apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: ca}))

	target := []string{plural + "." + group + "/talker-api", "-n", ns}
	var rep *report
	testenv.Eventually(t, 30*time.Second, "the conversion to fail", func(context.Context) (bool, error) {
		rep = explain(t, target...)
		return rep.Unreadable, nil
	})
	f := root(t, rep, "ConversionWebhookFailing")
	mustContain(t, "message", f.Message, "0-length response", "the webhook answered, but not with a usable conversion")
	mustContain(t, "remedy", f.Remedy, "fix the webhook")
	mustNotContain(t, "remedy", f.Remedy, "reinstall")
}

// Objects stored at a version the CRD no longer lists: "failed to list
// *v1.Route: request to convert CR from an invalid group/version:
// serving.knative.dev/v1alpha1" — "I had a ghost CR (v1alpha1) and the CRD
// was not serving v1alpha1" (https://github.com/knative/serving/issues/13262).
// The storage version moved to v1, storedVersions was pruned and v1alpha1
// dropped before the object was rewritten: nothing reads or writes it.
func TestUnreadableStoredVersionDropped(t *testing.T) {
	needCluster(t)
	const group, kind, plural = "serving.unseen-d.test", "Route", "routes"
	crd := twoVersionCRD(t, group, kind, plural)
	ns := plugintest.NewNamespace(t, cs, "serving")
	stuckObject(t, group, kind, plural, ns, "hello", "knative-controller", "routes.serving.unseen-d.test")

	ax := apiextensionsclient.NewForConfigOrDie(restConfig).ApiextensionsV1().CustomResourceDefinitions()
	c, err := ax.Get(t.Context(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = false, true
	if c, err = ax.Update(t.Context(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Status.StoredVersions = []string{"v1"}
	if c, err = ax.UpdateStatus(t.Context(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Spec.Versions = c.Spec.Versions[1:]
	if _, err = ax.Update(t.Context(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	target := []string{plural + "." + group + "/hello", "-n", ns}
	var rep *report
	testenv.Eventually(t, 30*time.Second, "v1alpha1 to go", func(context.Context) (bool, error) {
		rep = explain(t, target...)
		return rep.Unreadable && len(rep.Access) == 1, nil
	})
	f := root(t, rep, "StoredVersionNotServed")
	mustContain(t, "message", f.Message, "stored at "+group+"/v1alpha1", "no longer lists it", "reading is blocked at every served version", "removing finalizers (by its owner or by hand), is blocked")
	mustContain(t, "remedy", f.Remedy, "add version v1alpha1 back to CRD "+crd.Name+" with served: true")
}
