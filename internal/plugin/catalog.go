/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"strings"
)

// Strip risk of removing a finalizer by hand.
const (
	StripForbidden = "forbidden" // refused without --force (CRD cleanup, namespace kubernetes)
	StripRisky     = "risky"     // leaks something outside the API or skips real cleanup
	StripLowRisk   = "low-risk"  // only bookkeeping is skipped
)

// catalogEntry describes a well-known finalizer: who adds and removes it, and
// what removing it by hand costs. Keyed by finalizer (exact or prefix) and,
// when the same key means different things on different kinds, by kind.
type catalogEntry struct {
	Finalizer string
	// Prefix matches every finalizer starting with Finalizer.
	Prefix bool
	// Kinds restricts the entry; empty means any kind.
	Kinds []string
	// Component is who removes it.
	Component string
	// Workloads are Deployment/StatefulSet/DaemonSet names or
	// app.kubernetes.io/name labels the owner runs as.
	Workloads []string
	// BuiltIn is true for finalizers removed by kube-apiserver or
	// kube-controller-manager, whose liveness the API rarely shows.
	BuiltIn bool
	Catalog string
	Remedy  string
	Leaks   string
	Strip   string
}

// finalizerCatalog is research/stuck-termination.md §3.
var finalizerCatalog = []catalogEntry{
	{Finalizer: "kubernetes", Kinds: []string{"Namespace"}, Component: "namespace controller (kube-controller-manager)", BuiltIn: true, Catalog: "C15",
		Remedy: "fix what blocks the namespace controller (the findings below); it removes this token itself through /finalize",
		Leaks:  "every object still in the namespace stays in etcd, invisible, and reappears if the namespace is recreated", Strip: StripForbidden},
	{Finalizer: "foregroundDeletion", Component: "garbage collector (kube-controller-manager)", BuiltIn: true, Catalog: "E1",
		Remedy: "fix the blocking dependents; or re-issue DELETE with propagationPolicy=Background (dependents are then deleted in the background)",
		Leaks:  "nothing once no blocking dependent remains; otherwise the dependents are deleted in the background instead of first", Strip: StripLowRisk},
	{Finalizer: "orphan", Component: "garbage collector (kube-controller-manager)", BuiltIn: true, Catalog: "E3",
		Remedy: "let the garbage collector remove the ownerReferences of the dependents; if a webhook rejects that patch, fix it",
		Leaks:  "dependents keep an ownerReference to a deleted owner and are then garbage collected instead of orphaned", Strip: StripRisky},
	{Finalizer: "kubernetes.io/pvc-protection", Kinds: []string{"PersistentVolumeClaim"}, Component: "pvc-protection controller (kube-controller-manager)", BuiltIn: true, Catalog: "C1",
		Remedy: "delete or finish the pods that use the claim (including Completed/Failed ones)",
		Leaks:  "the volume may still be mounted and written by a pod", Strip: StripRisky},
	{Finalizer: "kubernetes.io/pv-protection", Kinds: []string{"PersistentVolume"}, Component: "pv-protection controller (kube-controller-manager)", BuiltIn: true, Catalog: "C2",
		Remedy: "delete the bound PersistentVolumeClaim first", Leaks: "a volume still bound to a claim", Strip: StripRisky},
	{Finalizer: "kubernetes.io/vac-protection", Kinds: []string{"VolumeAttributesClass"}, Component: "vac-protection controller (kube-controller-manager)", BuiltIn: true, Catalog: "C11",
		Remedy: "point the PVCs and PVs that still reference the VolumeAttributesClass at another class, or delete them",
		Leaks:  "the PVCs and PVs keep naming a class that no longer exists: modifying their volumes fails until they name another one", Strip: StripRisky},
	{Finalizer: "kubernetes.io/pv-controller", Kinds: []string{"PersistentVolume"}, Component: "PV controller (kube-controller-manager)", BuiltIn: true, Catalog: "C3",
		Remedy: "fix the in-tree volume plugin so the backend volume is deleted", Leaks: "the backend storage volume", Strip: StripRisky},
	{Finalizer: "external-provisioner.volume.kubernetes.io/finalizer", Component: "CSI external-provisioner", Workloads: []string{"csi-provisioner", "external-provisioner"}, Catalog: "C3",
		Remedy: "fix the CSI driver's controller so DeleteVolume succeeds; strip only if the backend volume is gone already",
		Leaks:  "the backend storage volume", Strip: StripRisky},
	{Finalizer: "external-attacher/", Prefix: true, Component: "CSI external-attacher", Workloads: []string{"csi-attacher", "external-attacher"}, Catalog: "C4",
		Remedy: "recover the node, or taint a confirmed-dead node node.kubernetes.io/out-of-service=nodeshutdown:NoExecute so the volume is force-detached",
		Leaks:  "a volume attached to a node", Strip: StripRisky},
	{Finalizer: "provisioner.storage.kubernetes.io/cloning-protection", Kinds: []string{"PersistentVolumeClaim"}, Component: "CSI external-provisioner", Workloads: []string{"csi-provisioner"}, Catalog: "C6",
		Remedy: "finish or delete the clone PVCs that use this claim as their dataSource",
		Leaks:  "a clone still being provisioned from this claim may fail, or copy a volume being deleted", Strip: StripRisky},
	{Finalizer: "snapshot.storage.kubernetes.io/", Prefix: true, Component: "snapshot-controller (external-snapshotter)", Workloads: []string{"snapshot-controller"}, Catalog: "C5",
		Remedy: "finish or cancel the restore or snapshot in progress; install or fix the snapshot-controller", Leaks: "a storage snapshot", Strip: StripRisky},
	{Finalizer: "service.kubernetes.io/load-balancer-cleanup", Kinds: []string{"Service"}, Component: "service controller (cloud-controller-manager)", Workloads: []string{"cloud-controller-manager"}, Catalog: "C7",
		Remedy: "fix the cloud-controller-manager or its cloud credentials", Leaks: "the cloud load balancer", Strip: StripRisky},
	{Finalizer: "batch.kubernetes.io/job-tracking", Kinds: []string{"Pod"}, Component: "Job controller (kube-controller-manager)", BuiltIn: true, Catalog: "C8",
		Remedy: "fix the webhook or validation that rejects the pod update; the Job controller then removes it",
		Leaks:  "only the Job's accounting of this pod", Strip: StripLowRisk},
	{Finalizer: "customresourcecleanup.apiextensions.k8s.io", Kinds: []string{"CustomResourceDefinition"}, Component: "CRD finalizer (kube-apiserver)", BuiltIn: true, Catalog: "C9",
		Remedy: "make the custom resources go away: reinstall their operator or handle each one's finalizer; fix a broken conversion webhook",
		Leaks:  "every remaining custom resource stays in etcd and comes back when the CRD is reinstalled", Strip: StripForbidden},
	{Finalizer: "networking.k8s.io/service-cidr-finalizer", Kinds: []string{"ServiceCIDR"}, Component: "ServiceCIDR controller (kube-controller-manager)", BuiltIn: true, Catalog: "C10",
		Remedy: "delete the Services whose ClusterIPs are still allocated from the range, or add a ServiceCIDR that covers them",
		Leaks:  "Services keep ClusterIPs that no ServiceCIDR covers any more: the API server's IP repair loop flags them, and the range may no longer be routed", Strip: StripRisky},
	{Finalizer: "resource.kubernetes.io/delete-protection", Kinds: []string{"ResourceClaim"}, Component: "resource claim controller (kube-controller-manager)", BuiltIn: true, Catalog: "C12",
		Remedy: "delete the pods that consume the ResourceClaim; fix the DRA driver",
		Leaks:  "devices still allocated (and maybe prepared on a node) to a claim that no longer exists: the scheduler may hand them out twice", Strip: StripRisky},
	{Finalizer: "scheduling.k8s.io/podgroup-protection", Component: "podgroupprotection controller (kube-controller-manager)", BuiltIn: true, Catalog: "C13",
		Remedy: "let the member pods finish, or delete them", Strip: StripRisky},
	// Third party (§3.2).
	{Finalizer: "resources-finalizer.argocd.argoproj.io", Prefix: true, Component: "Argo CD application controller", Workloads: []string{"argocd-application-controller"}, Catalog: "B",
		Remedy: "make the destination cluster reachable or fix the application controller", Leaks: "the application's resources in the destination cluster", Strip: StripRisky},
	{Finalizer: "acme.cert-manager.io/finalizer", Component: "cert-manager", Workloads: []string{"cert-manager"}, Catalog: "B",
		Remedy: "reinstall or restart cert-manager", Leaks: "ACME challenge records (DNS/HTTP)", Strip: StripLowRisk},
	{Finalizer: "finalizer.acme.cert-manager.io", Component: "cert-manager", Workloads: []string{"cert-manager"}, Catalog: "B",
		Remedy: "reinstall or restart cert-manager", Leaks: "ACME challenge records (DNS/HTTP)", Strip: StripLowRisk},
	{Finalizer: "controller.cattle.io/", Prefix: true, Component: "Rancher", Workloads: []string{"rancher", "cattle-cluster-agent"}, Catalog: "A9",
		Remedy: "run rancher-cleanup, or strip after confirming Rancher is gone", Strip: StripLowRisk},
	{Finalizer: "wrangler.cattle.io/", Prefix: true, Component: "Rancher", Workloads: []string{"rancher", "cattle-cluster-agent"}, Catalog: "A9",
		Remedy: "run rancher-cleanup, or strip after confirming Rancher is gone", Strip: StripLowRisk},
	{Finalizer: "finalizers.fluxcd.io", Component: "Flux (the controller of this kind)", Workloads: []string{"kustomize-controller", "helm-controller", "source-controller", "notification-controller", "image-reflector-controller", "image-automation-controller"}, Catalog: "B",
		Remedy: "reinstall Flux before deleting its objects", Leaks: "resources Flux applied (with prune) or artifacts", Strip: StripRisky},
	{Finalizer: "finalizer.managedresource.crossplane.io", Component: "Crossplane provider of this group", Catalog: "B",
		Remedy: "fix the provider or its credentials; never judge it dead from pod names", Leaks: "the external cloud resource", Strip: StripRisky},
	{Finalizer: "composite.apiextensions.crossplane.io", Component: "Crossplane", Workloads: []string{"crossplane"}, Catalog: "B",
		Remedy: "fix Crossplane; its composed resources go first", Leaks: "composed resources", Strip: StripRisky},
	{Finalizer: "karpenter.sh/termination", Component: "Karpenter", Workloads: []string{"karpenter"}, Catalog: "D5",
		Remedy: "fix the PodDisruptionBudgets blocking the drain, or the instance termination", Leaks: "the cloud instance", Strip: StripRisky},
	{Finalizer: "karpenter.k8s.aws/termination", Component: "Karpenter", Workloads: []string{"karpenter"}, Catalog: "D5",
		Remedy: "fix Karpenter", Leaks: "cloud resources of the node class", Strip: StripRisky},
	{Finalizer: "service.k8s.aws/resources", Component: "AWS Load Balancer Controller", Workloads: []string{"aws-load-balancer-controller"}, Catalog: "C7",
		Remedy: "fix the controller or its IAM permissions", Leaks: "the AWS load balancer", Strip: StripRisky},
	{Finalizer: "ingress.k8s.aws/resources", Component: "AWS Load Balancer Controller", Workloads: []string{"aws-load-balancer-controller"}, Catalog: "C7",
		Remedy: "fix the controller or its IAM permissions", Leaks: "the AWS load balancer", Strip: StripRisky},
	{Finalizer: "networking.gke.io/", Prefix: true, Component: "GKE ingress/NEG controller", Catalog: "C7",
		Remedy: "fix the GKE ingress controller", Leaks: "the Google Cloud load balancer or NEG", Strip: StripRisky},
	{Finalizer: "cluster.cluster.x-k8s.io", Component: "Cluster API", Workloads: []string{"capi-controller-manager"}, Catalog: "B",
		Remedy: "fix the infrastructure provider; never judge it dead from pod names", Leaks: "cloud machines and networks", Strip: StripRisky},
	{Finalizer: "cnrm.cloud.google.com/finalizer", Component: "Config Connector", Workloads: []string{"cnrm-controller-manager"}, Catalog: "B",
		Remedy: "fix Config Connector", Leaks: "the Google Cloud resource", Strip: StripRisky},
	{Finalizer: "strimzi.io/topic-operator", Component: "Strimzi topic operator", Workloads: []string{"strimzi-topic-operator", "entity-operator"}, Catalog: "B",
		Remedy: "fix the topic operator, or delete the topic after the Kafka cluster is gone", Leaks: "the Kafka topic", Strip: StripLowRisk},
	{Finalizer: "kopf.zalando.org/KopfFinalizerMarker", Component: "a kopf-based operator", Catalog: "A9",
		Remedy: "run the operator that watches this kind", Strip: StripRisky},
	{Finalizer: "apps.victoriametrics.com/finalizer", Component: "VictoriaMetrics operator", Workloads: []string{"victoria-metrics-operator"}, Catalog: "B",
		Remedy: "reinstall the operator", Strip: StripLowRisk},
	{Finalizer: "trident.netapp.io", Component: "NetApp Trident", Workloads: []string{"trident-controller"}, Catalog: "B",
		Remedy: "fix Trident", Leaks: "the storage backend volume", Strip: StripRisky},
}

// lookupCatalog finds the entry for finalizer on kind; exact matches win over
// prefixes, kind-specific entries over generic ones.
func lookupCatalog(finalizerName, kind string) (catalogEntry, bool) {
	best, bestScore := catalogEntry{}, -1
	for _, e := range finalizerCatalog {
		score := 0
		switch {
		case !e.Prefix && e.Finalizer == finalizerName:
			score = 2
		case e.Prefix && strings.HasPrefix(finalizerName, e.Finalizer):
			score = 1
		default:
			continue
		}
		if len(e.Kinds) > 0 {
			if !containsString(e.Kinds, kind) {
				continue
			}
			score += 4
		}
		if score > bestScore {
			best, bestScore = e, score
		}
	}
	return best, bestScore >= 0
}

// finalizerDomain returns the domain part of a domain-qualified finalizer,
// "" otherwise.
func finalizerDomain(f string) string {
	i := strings.Index(f, "/")
	if i <= 0 {
		return ""
	}
	d := f[:i]
	if !strings.Contains(d, ".") {
		return ""
	}
	return d
}

// groupMatchesDomain says whether an API group and a finalizer domain belong
// together: equal, or the domain a subdomain of the group
// (cleanup.widgets.io for widgets.io). A group below the domain does not
// match: example.com/x says nothing about metrics.example.com.
func groupMatchesDomain(group, domain string) bool {
	if group == "" || domain == "" {
		return false
	}
	return group == domain || strings.HasSuffix(domain, "."+group)
}

// genericManagers are field managers of people and generic tools: they add
// finalizers but never remove them on their own.
var genericManagers = []string{
	"kubectl", "kubectl-client-side-apply", "kubectl-edit", "kubectl-patch", "kubectl-create",
	"kubectl-replace", "kubectl-label", "kubectl-annotate", "kubectl-set", "kubectl-teardown",
	"before-first-apply", "Go-http-client", "unknown", "k9s", "Mozilla", "lens", "curl", "helm",
}

func isGenericManager(m string) bool {
	for _, g := range genericManagers {
		if strings.EqualFold(m, g) {
			return true
		}
	}
	return strings.HasPrefix(m, "kubectl-") || strings.HasPrefix(m, "Mozilla/") || strings.HasPrefix(m, "curl/")
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
