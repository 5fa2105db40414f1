/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

// thirdpartyEntries are well-known finalizers of third-party controllers (research §3.2).
var thirdpartyEntries = []Entry{
	{Finalizer: "resources-finalizer.argocd.argoproj.io", Prefix: true, Component: "Argo CD application controller", Workloads: []string{"argocd-application-controller"}, ID: "B",
		Remedy: "make the destination cluster reachable or fix the application controller", Leaks: "the application's resources in the destination cluster", Strip: StripRisky},
	{Finalizer: "acme.cert-manager.io/finalizer", Component: "cert-manager", Workloads: []string{"cert-manager"}, ID: "B",
		Remedy: "reinstall or restart cert-manager", Leaks: "ACME challenge records (DNS/HTTP)", Strip: StripLowRisk},
	{Finalizer: "finalizer.acme.cert-manager.io", Component: "cert-manager", Workloads: []string{"cert-manager"}, ID: "B",
		Remedy: "reinstall or restart cert-manager", Leaks: "ACME challenge records (DNS/HTTP)", Strip: StripLowRisk},
	{Finalizer: "controller.cattle.io/", Prefix: true, Component: "Rancher", Workloads: []string{"rancher", "cattle-cluster-agent"}, ID: "A9",
		Remedy: "run rancher-cleanup (it removes Rancher's finalizers); strip only after confirming Rancher is gone", Strip: StripLowRisk},
	{Finalizer: "wrangler.cattle.io/", Prefix: true, Component: "Rancher", Workloads: []string{"rancher", "cattle-cluster-agent"}, ID: "A9",
		Remedy: "run rancher-cleanup (it removes Rancher's finalizers); strip only after confirming Rancher is gone", Strip: StripLowRisk},
	{Finalizer: "finalizers.fluxcd.io", Component: "Flux (the controller of this kind)", Workloads: []string{"kustomize-controller", "helm-controller", "source-controller", "notification-controller", "image-reflector-controller", "image-automation-controller"}, ID: "B",
		Remedy: "reinstall Flux before deleting its objects", Leaks: "resources Flux applied (with prune) or artifacts", Strip: StripRisky},
	{Finalizer: "finalizer.managedresource.crossplane.io", Component: "Crossplane provider of this group", ID: "B",
		Remedy: "fix the provider or its credentials; never judge it dead from pod names", Leaks: "the external cloud resource", Strip: StripRisky},
	{Finalizer: "composite.apiextensions.crossplane.io", Component: "Crossplane", Workloads: []string{"crossplane"}, ID: "B",
		Remedy: "fix Crossplane; its composed resources go first", Leaks: "composed resources", Strip: StripRisky},
	{Finalizer: "cluster.cluster.x-k8s.io", Component: "Cluster API", Workloads: []string{"capi-controller-manager"}, ID: "B",
		Remedy: "fix the infrastructure provider; never judge it dead from pod names", Leaks: "cloud machines and networks", Strip: StripRisky},
	{Finalizer: "cnrm.cloud.google.com/finalizer", Component: "Config Connector", Workloads: []string{"cnrm-controller-manager"}, ID: "B",
		Remedy: "fix Config Connector", Leaks: "the Google Cloud resource", Strip: StripRisky},
	{Finalizer: "strimzi.io/topic-operator", Component: "Strimzi topic operator", Workloads: []string{"strimzi-topic-operator", "entity-operator"}, ID: "B",
		Remedy: "fix the topic operator, or delete the topic after the Kafka cluster is gone", Leaks: "the Kafka topic", Strip: StripLowRisk},
	{Finalizer: "kopf.zalando.org/KopfFinalizerMarker", Component: "a kopf-based operator", ID: "A9",
		Remedy: "run the operator that watches this kind", Strip: StripRisky},
	{Finalizer: "apps.victoriametrics.com/finalizer", Component: "VictoriaMetrics operator", Workloads: []string{"victoria-metrics-operator"}, ID: "B",
		Remedy: "reinstall the operator", Strip: StripLowRisk},
	{Finalizer: "trident.netapp.io", Component: "NetApp Trident", Workloads: []string{"trident-controller"}, ID: "B",
		Remedy: "fix Trident", Leaks: "the storage backend volume", Strip: StripRisky},
}
