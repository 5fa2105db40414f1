/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// Family 2 of issue 20: the owner found by who removes the finalizer, not
// by product name. Each scenario has a running controller whose name fits
// the finalizer's product, or none whose name does, and the cluster's own
// records (managedFields, ServiceAccounts and what they may write) say
// otherwise. A remedy that removes the finalizer by hand is offered only
// when the remover is identified for certain.

// Flux uninstalled in part: helm-controller is gone, kustomize-controller
// still runs, and a HelmRelease keeps finalizers.fluxcd.io
// (https://github.com/fluxcd/terraform-provider-flux/issues/597: "flux CRD
// helmreleases.helm.toolkit.fluxcd.io stucks in terminating deadlock";
// https://github.com/redpanda-data/helm-charts/issues/1232). Both Flux
// controllers may write HelmReleases (Flux binds them to cluster-admin);
// managedFields say helm-controller wrote the finalizer, and only it
// removes it: explain must not wait on kustomize-controller.
func TestRemoverNotTheProductsOtherController(t *testing.T) {
	needCluster(t)
	const group, fin = "helm.toolkit.fluxcd.io", "finalizers.fluxcd.io"
	newCRD(t, group, "HelmRelease", "helmreleases", "v1alpha1")
	flux := plugintest.NewNamespace(t, cs, "flux-system")
	operator(t, flux, "kustomize-controller", "kustomize-controller", []string{"kustomize-controller"}, "ghcr.io/fluxcd/kustomize-controller:v1.3.0", 1)
	grant(t, flux, "kustomize-controller", "", group, "helmreleases")
	ns := plugintest.NewNamespace(t, cs, "podinfo")
	stuckObject(t, group, "HelmRelease", "helmreleases", ns, "podinfo", "helm-controller", fin)

	rep := explain(t, "helmreleases."+group+"/podinfo", "-n", ns)
	f := find(rep, fin)
	if f == nil || f.Owner == nil {
		t.Fatalf("no finding with an owner for %s:\n%s", fin, dump(rep.Findings))
	}
	if f.Cause != "FinalizerOwnerGone" || f.Severity != "blocker" || f.Owner.State != "missing" || f.Owner.Workload != nil {
		t.Fatalf("finding %s/%s, owner %s: want FinalizerOwnerGone, helm-controller missing, not kustomize-controller", f.Cause, f.Severity, dump(f.Owner))
	}
	mustContain(t, "evidence", dump(f.Owner.Evidence), `\"helm-controller\" wrote the finalizer`)
	if f.Owner.Confidence != "likely" {
		t.Errorf("confidence %q, want likely (the writer is named, no workload confirms it)", f.Owner.Confidence)
	}
	mustNotContain(t, "remedy", f.Remedy, "release only", "kubectl teardown release")
}

// k3s's embedded helm controller: HelmCharts stuck with
// wrangler.cattle.io/on-helm-chart-remove, "No job is started to delete
// the chart" (https://github.com/k3s-io/helm-controller/issues/33;
// https://github.com/k3s-io/helm-controller/issues/135). The controller
// runs inside the k3s server process, not as a workload: the finalizer's
// prefix belongs to Rancher's wrangler, and no Rancher runs, but calling
// the owner missing, and offering to strip, is a guess. managedFields
// name the k3s process; explain says the remover is unknown.
func TestRemoverEmbeddedInServerProcess(t *testing.T) {
	needCluster(t)
	const group, fin = "helm.cattle.io", "wrangler.cattle.io/on-helm-chart-remove"
	crd := newCRD(t, group, "HelmChart", "helmcharts", "v1alpha1")
	// Rancher's group goes at the end (after the object's finalizer):
	// TestPlatformAbsent needs a cluster where nothing of it is installed.
	t.Cleanup(func() {
		_ = apiextensionsclient.NewForConfigOrDie(restConfig).ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	ns := plugintest.NewNamespace(t, cs, "kube-charts")
	stuckObject(t, group, "HelmChart", "helmcharts", ns, "csi-s3", "k3s", fin)

	rep := explain(t, "helmcharts."+group+"/csi-s3", "-n", ns)
	f := find(rep, fin)
	if f == nil || f.Owner == nil {
		t.Fatalf("no finding with an owner for %s:\n%s", fin, dump(rep.Findings))
	}
	if f.Owner.State == "missing" || f.Owner.State == "down" || f.Cause == "FinalizerOwnerGone" {
		t.Errorf("finding %s, owner %s: an owner named only by the finalizer's prefix, against managedFields, is not known to be gone", f.Cause, dump(f.Owner))
	}
	if f.Owner.State != "unknown" || f.Owner.Confidence != "unknown" || f.Cause != "FinalizerOwnerUnknown" || f.Severity != "blocker" {
		t.Errorf("finding %s/%s, owner %s: want FinalizerOwnerUnknown, a blocker, state and confidence unknown", f.Cause, f.Severity, dump(f.Owner))
	}
	mustContain(t, "evidence", dump(f.Owner.Evidence), `\"k3s\" wrote the finalizer`, "outside the cluster's workloads")
	mustNotContain(t, "remedy", f.Remedy, "strip", "release")
}

// Two Argo CD installations in one cluster, one of them (team-b's) removed
// with Applications still deleting (https://github.com/argoproj/argo-cd/issues/10257:
// "running multiple Argo's on the same cluster ... AppProjects in pending
// deletion, but failed to delete bc of finalizers";
// https://github.com/argoproj/argo-cd/issues/18965). The application
// controller still running is argocd-a's, namespace-scoped: its Role lets
// it write Applications in argocd-a only. It is not the remover of
// team-b's Application, and is neither waited on nor asked to be granted
// more rights.
func TestRemoverAnotherInstallation(t *testing.T) {
	needCluster(t)
	const group, fin = "argoproj.io", "resources-finalizer.argocd.argoproj.io"
	newCRD(t, group, "Application", "applications", "v1alpha1")
	argoA := plugintest.NewNamespace(t, cs, "argocd-a")
	statefulOperator(t, argoA, "argocd-application-controller", "argocd-application-controller", "quay.io/argoproj/argocd:v2.4.8", 1)
	grant(t, argoA, "argocd-application-controller", argoA, group, "applications")
	teamB := plugintest.NewNamespace(t, cs, "team-b")
	stuckObject(t, group, "Application", "applications", teamB, "guestbook", "argocd-server", fin)

	rep := explain(t, "applications."+group+"/guestbook", "-n", teamB)
	f := find(rep, fin)
	if f == nil || f.Owner == nil {
		t.Fatalf("no finding with an owner for %s:\n%s", fin, dump(rep.Findings))
	}
	if f.Owner.State == "alive" || f.Cause == "CleanupInProgress" || f.Cause == "OwnerLacksRBAC" || !rep.Blocked {
		t.Fatalf("finding %s, owner %s: argocd-a's controller is another installation, not the remover", f.Cause, dump(f.Owner))
	}
	mustContain(t, "evidence", dump(f.Owner.Evidence), "is another installation", "in namespace "+argoA+" only, not in "+teamB)
	if f.Owner.Confidence == "certain" {
		t.Errorf("confidence certain, want less: no remover was found")
	}
	mustNotContain(t, "remedy", f.Remedy, "release", "strip")
}

// Two kubebuilder operators, both running "/manager" (so both write as
// field manager "manager"): lbconfig-operator's controller-manager was
// scaled away and its ExternalLoadBalancer is stuck
// (https://github.com/operator-framework/operator-sdk/issues/3967: "CR gets
// stuck in finalizer after deleting all operator resources"); another
// operator's controller-manager runs. Only lbconfig-operator's
// ServiceAccount may write ExternalLoadBalancers: it is the remover, for
// certain, and it is down.
func TestRemoverByServiceAccount(t *testing.T) {
	needCluster(t)
	const group, fin = "lb.lbconfig.carlosedp.com", "lb.lbconfig.carlosedp.com/finalizer"
	newCRD(t, group, "ExternalLoadBalancer", "externalloadbalancers", "v1alpha1")
	lbOps := plugintest.NewNamespace(t, cs, "lbconfig-operator-system")
	operator(t, lbOps, "lbconfig-operator-controller-manager", "lbconfig-operator-controller-manager", []string{"/manager"}, "quay.io/carlosedp/lbconfig-operator:v0.2.0", 0)
	grant(t, lbOps, "lbconfig-operator-controller-manager", "", group, "externalloadbalancers")
	other := plugintest.NewNamespace(t, cs, "memcached-operator-system")
	operator(t, other, "memcached-operator-controller-manager", "memcached-operator-controller-manager", []string{"/manager"}, "example.com/memcached-operator:v0.0.1", 1)
	grant(t, other, "memcached-operator-controller-manager", "", "cache.example.com", "memcacheds")
	ns := plugintest.NewNamespace(t, cs, "lb")
	stuckObject(t, group, "ExternalLoadBalancer", "externalloadbalancers", ns, "master-lb", "manager", fin)

	rep := explain(t, "externalloadbalancers."+group+"/master-lb", "-n", ns)
	f := root(t, rep, "FinalizerOwnerGone")
	if f.Owner == nil || f.Owner.Workload == nil || f.Owner.Workload.Name != "lbconfig-operator-controller-manager" || f.Owner.State != "down" {
		t.Fatalf("owner %s: want lbconfig-operator-controller-manager, down", dump(f.Owner))
	}
	if f.Owner.Confidence != "certain" {
		t.Errorf("confidence %q, want certain (the writer's binary runs there, and its ServiceAccount may write the object)", f.Owner.Confidence)
	}
	mustContain(t, "remedy", f.Remedy, "reinstall or restart")
	if f.Leaks == "" {
		t.Errorf("no leaks beside a remedy that may remove the finalizer")
	}
}
