/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"
)

// This file holds the typed lists the families read, each listed once per
// run (and namespace, where it is namespaced) so that explaining many
// objects (status) costs one list per kind and namespace, never one request
// per object. A getter of one object finds it in its kind's list.

// listPaged reads every item of a list in pages of 500 with client-go's
// pager, which falls back to a full list when a continue token expires.
func listPaged[T any](ctx context.Context, opts metav1.ListOptions, list pager.ListPageFunc) ([]T, error) {
	var out []T
	p := pager.New(list)
	p.PageSize = 500
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		item, ok := any(obj).(*T)
		if !ok {
			return fmt.Errorf("unexpected list item %T", obj)
		}
		out = append(out, *item)
		return nil
	})
	return out, err
}

// listOnce is listPaged of list, once per run and key.
func listOnce[T any](ctx context.Context, c *Cluster, key string, list pager.ListPageFunc) ([]T, error) {
	return cached(c, "list/"+key, func() ([]T, error) { return listPaged[T](ctx, metav1.ListOptions{}, list) })
}

// named finds the item of items named ns/name, or a NotFound error of gr;
// err, the list's, is returned first.
func named[T any, P interface {
	*T
	GetName() string
	GetNamespace() string
}](items []T, err error, gr schema.GroupResource, ns, name string) (*T, error) {
	if err != nil {
		return nil, err
	}
	for i := range items {
		p := P(&items[i])
		if p.GetName() == name && p.GetNamespace() == ns {
			return &items[i], nil
		}
	}
	return nil, apierrors.NewNotFound(gr, name)
}

// Namespace is one Namespace, read once per run.
func (c *Cluster) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return cached(c, "namespace/"+name, func() (*corev1.Namespace, error) {
		return c.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	})
}

// Namespaces is every Namespace selector (a label selector, "" for all)
// matches, in one paged list per run and selector.
func (c *Cluster) Namespaces(ctx context.Context, selector string) ([]corev1.Namespace, error) {
	return listOnce[corev1.Namespace](ctx, c, "namespaces/"+selector, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.LabelSelector = selector
		return c.kube.CoreV1().Namespaces().List(ctx, o)
	})
}

// NamespaceTerminating is true when namespace ns is being deleted.
func (c *Cluster) NamespaceTerminating(ctx context.Context, ns string) bool {
	if ns == "" {
		return false
	}
	n, err := c.Namespace(ctx, ns)
	return err == nil && n.DeletionTimestamp != nil
}

// Pods is every pod in ns ("" for all).
func (c *Cluster) Pods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	return listOnce[corev1.Pod](ctx, c, "pods/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.CoreV1().Pods(ns).List(ctx, o)
	})
}

// Pod is one pod from Pods, or a NotFound error.
func (c *Cluster) Pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	pods, err := c.Pods(ctx, ns)
	return named(pods, err, corev1.Resource("pods"), ns, name)
}

// PodsLabelled is every pod matching selector, in every namespace.
func (c *Cluster) PodsLabelled(ctx context.Context, selector string) ([]corev1.Pod, error) {
	return cached(c, "pods?"+selector, func() ([]corev1.Pod, error) {
		return listPaged[corev1.Pod](ctx, metav1.ListOptions{LabelSelector: selector}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.kube.CoreV1().Pods("").List(ctx, o)
		})
	})
}

// PodsOnNode is every pod bound to node, from one list of every pod.
func (c *Cluster) PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error) {
	pods, err := c.Pods(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

// Node is one Node, from one list of them all, or a NotFound error.
func (c *Cluster) Node(ctx context.Context, name string) (*corev1.Node, error) {
	nodes, err := listOnce[corev1.Node](ctx, c, "nodes", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.CoreV1().Nodes().List(ctx, o)
	})
	return named(nodes, err, corev1.Resource("nodes"), "", name)
}

// Job is one Job, from one list of its namespace, or a NotFound error.
func (c *Cluster) Job(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	jobs, err := listOnce[batchv1.Job](ctx, c, "jobs/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.BatchV1().Jobs(ns).List(ctx, o)
	})
	return named(jobs, err, batchv1.Resource("jobs"), ns, name)
}

// Leases is every coordination.k8s.io Lease of the cluster.
func (c *Cluster) Leases(ctx context.Context) ([]coordinationv1.Lease, error) {
	return listOnce[coordinationv1.Lease](ctx, c, "leases", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.CoordinationV1().Leases("").List(ctx, o)
	})
}

// Lease is one Lease, read once per run (the control plane's: a GET, not a
// list of every Lease, for a run that needs no other).
func (c *Cluster) Lease(ctx context.Context, ns, name string) (*coordinationv1.Lease, error) {
	return cached(c, "lease/"+ns+"/"+name, func() (*coordinationv1.Lease, error) {
		return c.kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	})
}

// WarningEvents is every Warning Event of namespace ns, from Events.
func (c *Cluster) WarningEvents(ctx context.Context, ns string) ([]corev1.Event, error) {
	all, err := c.Events(ctx, ns)
	if err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, ev := range all {
		if ev.Type == corev1.EventTypeWarning {
			out = append(out, ev)
		}
	}
	return out, nil
}

// Events is every Event of namespace ns, of every type.
func (c *Cluster) Events(ctx context.Context, ns string) ([]corev1.Event, error) {
	return listOnce[corev1.Event](ctx, c, "events/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.CoreV1().Events(ns).List(ctx, o)
	})
}

// Services is every Service of ns.
func (c *Cluster) Services(ctx context.Context, ns string) ([]corev1.Service, error) {
	return listOnce[corev1.Service](ctx, c, "services/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.CoreV1().Services(ns).List(ctx, o)
	})
}

// Service is one Service from Services, or a NotFound error.
func (c *Cluster) Service(ctx context.Context, ns, name string) (*corev1.Service, error) {
	svcs, err := c.Services(ctx, ns)
	return named(svcs, err, corev1.Resource("services"), ns, name)
}

// EndpointSlices is every EndpointSlice of ns.
func (c *Cluster) EndpointSlices(ctx context.Context, ns string) ([]discoveryv1.EndpointSlice, error) {
	return listOnce[discoveryv1.EndpointSlice](ctx, c, "endpointslices/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.DiscoveryV1().EndpointSlices(ns).List(ctx, o)
	})
}

// PersistentVolumeClaims is every claim of ns ("" for all).
func (c *Cluster) PersistentVolumeClaims(ctx context.Context, ns string) ([]corev1.PersistentVolumeClaim, error) {
	return listOnce[corev1.PersistentVolumeClaim](ctx, c, "pvcs/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, o)
	})
}

// PersistentVolumeClaim is one claim from PersistentVolumeClaims, or a
// NotFound error.
func (c *Cluster) PersistentVolumeClaim(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	pvcs, err := c.PersistentVolumeClaims(ctx, ns)
	return named(pvcs, err, corev1.Resource("persistentvolumeclaims"), ns, name)
}

// PersistentVolumes is every PersistentVolume.
func (c *Cluster) PersistentVolumes(ctx context.Context) ([]corev1.PersistentVolume, error) {
	return listOnce[corev1.PersistentVolume](ctx, c, "pvs", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.CoreV1().PersistentVolumes().List(ctx, o)
	})
}

// PersistentVolume is one volume from PersistentVolumes, or a NotFound error.
func (c *Cluster) PersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	pvs, err := c.PersistentVolumes(ctx)
	return named(pvs, err, corev1.Resource("persistentvolumes"), "", name)
}

// VolumeAttachments is every VolumeAttachment.
func (c *Cluster) VolumeAttachments(ctx context.Context) ([]storagev1.VolumeAttachment, error) {
	return listOnce[storagev1.VolumeAttachment](ctx, c, "volumeattachments", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.StorageV1().VolumeAttachments().List(ctx, o)
	})
}

// VolumeAttachment is one VolumeAttachment from VolumeAttachments, or a
// NotFound error.
func (c *Cluster) VolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error) {
	vas, err := c.VolumeAttachments(ctx)
	return named(vas, err, storagev1.Resource("volumeattachments"), "", name)
}

// CSIDrivers is every CSIDriver.
func (c *Cluster) CSIDrivers(ctx context.Context) ([]storagev1.CSIDriver, error) {
	return listOnce[storagev1.CSIDriver](ctx, c, "csidrivers", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.StorageV1().CSIDrivers().List(ctx, o)
	})
}

// ResourceClaims is every ResourceClaim of ns.
func (c *Cluster) ResourceClaims(ctx context.Context, ns string) ([]resourcev1.ResourceClaim, error) {
	return listOnce[resourcev1.ResourceClaim](ctx, c, "resourceclaims/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.ResourceV1().ResourceClaims(ns).List(ctx, o)
	})
}

// ResourceClaim is one claim from ResourceClaims, or a NotFound error.
func (c *Cluster) ResourceClaim(ctx context.Context, ns, name string) (*resourcev1.ResourceClaim, error) {
	claims, err := c.ResourceClaims(ctx, ns)
	return named(claims, err, resourcev1.Resource("resourceclaims"), ns, name)
}

// PodDisruptionBudgets is every PodDisruptionBudget of ns ("" for all).
func (c *Cluster) PodDisruptionBudgets(ctx context.Context, ns string) ([]policyv1.PodDisruptionBudget, error) {
	return listOnce[policyv1.PodDisruptionBudget](ctx, c, "pdbs/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, o)
	})
}

// ServiceCIDRs is every ServiceCIDR.
func (c *Cluster) ServiceCIDRs(ctx context.Context) ([]networkingv1.ServiceCIDR, error) {
	return listOnce[networkingv1.ServiceCIDR](ctx, c, "servicecidrs", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.NetworkingV1().ServiceCIDRs().List(ctx, o)
	})
}

// ServiceCIDR is one ServiceCIDR from ServiceCIDRs, or a NotFound error.
func (c *Cluster) ServiceCIDR(ctx context.Context, name string) (*networkingv1.ServiceCIDR, error) {
	cidrs, err := c.ServiceCIDRs(ctx)
	return named(cidrs, err, networkingv1.Resource("servicecidrs"), "", name)
}

// IPAddresses is every IPAddress.
func (c *Cluster) IPAddresses(ctx context.Context) ([]networkingv1.IPAddress, error) {
	return listOnce[networkingv1.IPAddress](ctx, c, "ipaddresses", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.NetworkingV1().IPAddresses().List(ctx, o)
	})
}

// ValidatingWebhookConfigurations is every ValidatingWebhookConfiguration.
func (c *Cluster) ValidatingWebhookConfigurations(ctx context.Context) ([]admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return listOnce[admissionregistrationv1.ValidatingWebhookConfiguration](ctx, c, "validatingwebhooks", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, o)
	})
}

// MutatingWebhookConfigurations is every MutatingWebhookConfiguration.
func (c *Cluster) MutatingWebhookConfigurations(ctx context.Context) ([]admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return listOnce[admissionregistrationv1.MutatingWebhookConfiguration](ctx, c, "mutatingwebhooks", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, o)
	})
}

// Deployments is every Deployment.
func (c *Cluster) Deployments(ctx context.Context) ([]appsv1.Deployment, error) {
	return listOnce[appsv1.Deployment](ctx, c, "deployments", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.AppsV1().Deployments("").List(ctx, o)
	})
}

// StatefulSets is every StatefulSet.
func (c *Cluster) StatefulSets(ctx context.Context) ([]appsv1.StatefulSet, error) {
	return listOnce[appsv1.StatefulSet](ctx, c, "statefulsets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.AppsV1().StatefulSets("").List(ctx, o)
	})
}

// DaemonSets is every DaemonSet.
func (c *Cluster) DaemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	return listOnce[appsv1.DaemonSet](ctx, c, "daemonsets", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.AppsV1().DaemonSets("").List(ctx, o)
	})
}

// ClusterRoleBindings is every ClusterRoleBinding.
func (c *Cluster) ClusterRoleBindings(ctx context.Context) ([]rbacv1.ClusterRoleBinding, error) {
	return listOnce[rbacv1.ClusterRoleBinding](ctx, c, "clusterrolebindings", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.RbacV1().ClusterRoleBindings().List(ctx, o)
	})
}

// ClusterRoles is every ClusterRole.
func (c *Cluster) ClusterRoles(ctx context.Context) ([]rbacv1.ClusterRole, error) {
	return listOnce[rbacv1.ClusterRole](ctx, c, "clusterroles", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.RbacV1().ClusterRoles().List(ctx, o)
	})
}

// RoleBindingsIn is every RoleBinding of namespace ns (one namespace's
// list, for a reader who may not list them all).
func (c *Cluster) RoleBindingsIn(ctx context.Context, ns string) ([]rbacv1.RoleBinding, error) {
	return listOnce[rbacv1.RoleBinding](ctx, c, "rolebindings/"+ns, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.RbacV1().RoleBindings(ns).List(ctx, o)
	})
}

// RoleBindings is every RoleBinding of every namespace.
func (c *Cluster) RoleBindings(ctx context.Context) ([]rbacv1.RoleBinding, error) {
	return listOnce[rbacv1.RoleBinding](ctx, c, "rolebindings", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.kube.RbacV1().RoleBindings("").List(ctx, o)
	})
}
