/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// noCRDIn waits until no CRD of the domain is left (another scenario's may
// still be being deleted), so that a platform is absent as the case says.
func noCRDIn(t *testing.T, domain string) {
	t.Helper()
	ax := apiextensionsclient.NewForConfigOrDie(restConfig)
	testenv.Eventually(t, 60*time.Second, "no CRD of *."+domain, func(ctx context.Context) (bool, error) {
		l, err := ax.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range l.Items {
			if c.Spec.Group == domain || strings.HasSuffix(c.Spec.Group, "."+domain) {
				return false, nil
			}
		}
		return true, nil
	})
}

// Issue 17, family 4: a finalizer of a platform of which nothing is
// installed here: Rancher's namespace-auth left on a project namespace
// after Rancher was removed (rancher/rancher#36450, rancher/rancher-cleanup#88),
// the AWS Load Balancer Controller's on a Service after its uninstall
// (kubernetes-sigs/aws-load-balancer-controller#1629: "service stuck on
// deletion after controller uninstall"), a Crossplane provider's on a
// managed resource whose CRD outlived Crossplane. Before, explain called
// the product "missing" (B1, as if a controller were down) or the token an
// orphan typo (B5, strip as the designed remedy). Now: nothing installed
// here serves the finalizer, the remedy (reinstall, or release with the
// cleanup accepted as leaked) and the risk. Negative controls: a platform
// whose CRDs are installed but whose controller is not (cert-manager), and
// one whose controller runs (the AWS Load Balancer Controller), are not
// called absent.
func TestPlatformAbsent(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	noCRDIn(t, "cattle.io")

	// Rancher: a project namespace.
	rancherNS := plugintest.NewNamespace(t, cs, "p-7xk2q")
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, rancherNS, types.MergePatchType, []byte(`{"metadata":{"finalizers":["controller.cattle.io/namespace-auth"]}}`), metav1.PatchOptions{FieldManager: "rancher"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().Namespaces().Patch(context.Background(), rancherNS, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := cs.CoreV1().Namespaces().Delete(ctx, rancherNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The AWS Load Balancer Controller: a Service of type LoadBalancer.
	shop := plugintest.NewNamespace(t, cs, "shop")
	lbSvc := func(name string) string {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: shop, Finalizers: []string{"service.k8s.aws/resources"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}}
		if _, err := cs.CoreV1().Services(shop).Create(ctx, svc, metav1.CreateOptions{FieldManager: "aws-load-balancer-controller"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cs.CoreV1().Services(shop).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
		if err := cs.CoreV1().Services(shop).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return "service/" + name
	}
	storefront := lbSvc("storefront")
	// A Crossplane provider's managed resource; Crossplane is gone.
	ensureCRD(t, "storage.gcp.m.upbound.io", "Bucket", "buckets", "v1beta1")
	terminatingObject(t, "storage.gcp.m.upbound.io", "v1beta1", "Bucket", "buckets", shop, "media", "provider-gcp-storage",
		[]string{"finalizer.managedresource.crossplane.io"}, map[string]any{"forProvider": map[string]any{"location": "EU"}}, nil)

	for _, tc := range []struct {
		name     string
		target   []string
		fin      string
		platform string
		leaks    string
	}{
		{"Rancher", []string{"namespace/" + rancherNS}, "controller.cattle.io/namespace-auth", "Rancher", "rancher-cleanup"},
		{"AWS Load Balancer Controller", []string{storefront, "-n", shop}, "service.k8s.aws/resources", "the AWS controllers", "load balancers"},
		{"Crossplane", []string{"buckets.storage.gcp.m.upbound.io/media", "-n", shop}, "finalizer.managedresource.crossplane.io", "Crossplane", "unmanaged and billed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := explain(t, tc.target...)
			f := root(t, rep, "FinalizerPlatformAbsent")
			if f.Finalizer != tc.fin || f.Owner == nil || f.Owner.State != "missing" || f.Owner.Confidence != "certain" {
				t.Fatalf("root blocker %s on %s, owner %s", f.Cause, f.Finalizer, dump(f.Owner))
			}
			mustContain(t, "message", f.Message, "nothing installed here serves \""+tc.fin+"\"", tc.platform)
			mustContain(t, "remedy", f.Remedy, "reinstall", "kubectl teardown release", "--finalizer "+tc.fin)
			mustContain(t, "leaks", f.Leaks, "releasing skips", tc.leaks)
			mustNotContain(t, "message", f.Message, "typo", "does not look alive")
		})
	}

	t.Run("CRDs installed, controller not (negative control)", func(t *testing.T) {
		ensureCRD(t, "acme.cert-manager.io", "Challenge", "challenges", "v1")
		terminatingObject(t, "acme.cert-manager.io", "v1", "Challenge", "challenges", shop, "www-shop-dns01", "cert-manager-challenges",
			[]string{"finalizer.acme.cert-manager.io"}, map[string]any{"dnsName": "www.shop.example"}, nil)
		rep := explain(t, "challenges.acme.cert-manager.io/www-shop-dns01", "-n", shop)
		if f := find(rep, "finalizer.acme.cert-manager.io", "FinalizerPlatformAbsent"); f != nil {
			t.Fatalf("cert-manager's CRDs are installed, yet explain says the platform is absent:\n%s", dump(f))
		}
		f := find(rep, "finalizer.acme.cert-manager.io")
		if f == nil || f.Owner == nil || (f.Cause != "FinalizerOwnerGone" && f.Cause != "FinalizerOwnerUnknown") {
			t.Fatalf("want cert-manager's controller named gone or unknown:\n%s", dump(f))
		}
		mustContain(t, "owner evidence", strings.Join(f.Owner.Evidence, "\n"), "cert-manager is installed here (CRD challenges.acme.cert-manager.io)")
	})
	t.Run("controller running (negative control)", func(t *testing.T) {
		kube := plugintest.NewNamespace(t, cs, "kube-system-lbc")
		operator(t, kube, "aws-load-balancer-controller", "aws-load-balancer-controller", []string{"/controller"}, "public.ecr.aws/eks/aws-load-balancer-controller:v2.8.1", 1)
		t.Cleanup(func() {
			_ = cs.AppsV1().Deployments(kube).Delete(context.Background(), "aws-load-balancer-controller", metav1.DeleteOptions{})
		})
		rep := explain(t, storefront, "-n", shop)
		if f := find(rep, "service.k8s.aws/resources", "FinalizerPlatformAbsent"); f != nil {
			t.Fatalf("the controller runs, yet explain says the platform is absent:\n%s", dump(f))
		}
	})
}
