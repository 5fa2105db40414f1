/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/internal/diagnose/signals"
)

// This file finds the workload or Lease a finalizer's owner runs as.

type workload struct {
	Ref      ObjectRef
	Labels   map[string]string
	Ready    int32
	Desired  int32
	Deleting bool
	// ServiceAccount its pods run as ("default" when unset).
	ServiceAccount string
	// Health is what the workload's own status conditions say when they
	// report it unhealthy ("Available=False (MinimumReplicasUnavailable:
	// ...)"), cleaned; "" otherwise.
	Health string
	// Containers are the names and image names (no registry, no tag) of
	// its pod template's containers: CSI sidecars run inside a driver's
	// controller, named after the driver.
	Containers []string
}

// containersOf returns the container names, image names and command
// names of a pod spec.
func containersOf(spec *corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.Containers {
		img := c.Image
		if i := strings.LastIndex(img, "/"); i >= 0 {
			img = img[i+1:]
		}
		if i := strings.IndexAny(img, ":@"); i >= 0 {
			img = img[:i]
		}
		out = append(out, c.Name, img)
		if len(c.Command) > 0 {
			// The binary: client-go's default user agent, and so field
			// manager, is its name (kubebuilder's /manager).
			out = append(out, c.Command[0][strings.LastIndex(c.Command[0], "/")+1:])
		}
	}
	return out
}

// serviceAccountOf returns the ServiceAccount of a pod spec.
func serviceAccountOf(spec *corev1.PodSpec) string {
	if spec.ServiceAccountName != "" {
		return spec.ServiceAccountName
	}
	return "default"
}

// matchingWorkloads returns every Deployment, StatefulSet and DaemonSet
// named after, labelled (app.kubernetes.io/name, app) with, or running a
// container, image or command called, a candidate; without one, a bare pod
// labelled so (an operator run as a pod, or pods of a deleted Deployment).
func (e *Explainer) matchingWorkloads(ctx context.Context, candidates []string) []workload {
	var out []workload
	for _, w := range workloadList(ctx, e.c) {
		if workloadMatches(w.Ref.Name, w.Labels, candidates) || containsAny(w.Containers, candidates) {
			out = append(out, w)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, c := range candidates {
		for _, key := range []string{"app.kubernetes.io/name", "app"} {
			pods, err := e.c.PodsLabelled(ctx, key+"="+c)
			if err != nil || len(pods) == 0 {
				continue
			}
			p := pods[0]
			ready := int32(0)
			if signals.PodReady(&p) && p.DeletionTimestamp == nil {
				ready = 1
			}
			return []workload{{Ref: ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: p.Namespace, Name: p.Name}, Labels: p.Labels, Ready: ready, Desired: 1, Deleting: p.DeletionTimestamp != nil,
				ServiceAccount: serviceAccountOf(&p.Spec)}}
		}
	}
	return nil
}

type leaseInfo struct {
	Ref      ObjectRef
	Holder   string
	Renewed  time.Time
	Duration time.Duration
}

// findLease finds a coordination.k8s.io Lease named after a candidate, or
// held by an identity that starts with one.
func (e *Explainer) findLease(ctx context.Context, candidates []string) (leaseInfo, bool) {
	leases, err := e.c.Leases(ctx)
	if err != nil {
		return leaseInfo{}, false
	}
	for _, le := range leases {
		holder := ""
		if le.Spec.HolderIdentity != nil {
			holder = *le.Spec.HolderIdentity
		}
		for _, c := range candidates {
			if c == "" || (le.Name != c && !strings.HasPrefix(le.Name, c+"-") && !strings.HasPrefix(holder, c)) {
				continue
			}
			info := leaseInfo{Ref: ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Resource: "leases", Namespace: le.Namespace, Name: le.Name}, Holder: holder, Duration: 15 * time.Second}
			if le.Spec.RenewTime != nil {
				info.Renewed = le.Spec.RenewTime.Time
			}
			if le.Spec.LeaseDurationSeconds != nil {
				info.Duration = time.Duration(*le.Spec.LeaseDurationSeconds) * time.Second
			}
			return info, true
		}
	}
	return leaseInfo{}, false
}

func containsAny(list, candidates []string) bool {
	for _, c := range candidates {
		if c != "" && containsString(list, c) {
			return true
		}
	}
	return false
}

// workloadMatches is the name/label rule of findWorkload.
func workloadMatches(name string, labels map[string]string, candidates []string) bool {
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if name == c || labels["app.kubernetes.io/name"] == c || labels["app"] == c {
			return true
		}
	}
	return false
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// workloadList is every Deployment, StatefulSet and DaemonSet, read once
// per run.
func workloadList(ctx context.Context, c *kube.Cluster) []workload {
	return kube.Memo(c, "workloads", func() []workload {
		var out []workload
		if l, err := c.Deployments(ctx); err == nil {
			for _, d := range l {
				out = append(out, workload{Ref: ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: d.Namespace, Name: d.Name},
					Labels: d.Labels, Ready: d.Status.AvailableReplicas, Desired: replicas(d.Spec.Replicas), Deleting: d.DeletionTimestamp != nil,
					ServiceAccount: serviceAccountOf(&d.Spec.Template.Spec), Containers: containersOf(&d.Spec.Template.Spec), Health: deploymentHealth(d.Status.Conditions)})
			}
		}
		if l, err := c.StatefulSets(ctx); err == nil {
			for _, s := range l {
				out = append(out, workload{Ref: ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Resource: "statefulsets", Namespace: s.Namespace, Name: s.Name},
					Labels: s.Labels, Ready: s.Status.ReadyReplicas, Desired: replicas(s.Spec.Replicas), Deleting: s.DeletionTimestamp != nil,
					ServiceAccount: serviceAccountOf(&s.Spec.Template.Spec), Containers: containersOf(&s.Spec.Template.Spec)})
			}
		}
		if l, err := c.DaemonSets(ctx); err == nil {
			for _, d := range l {
				out = append(out, workload{Ref: ObjectRef{APIVersion: "apps/v1", Kind: "DaemonSet", Resource: "daemonsets", Namespace: d.Namespace, Name: d.Name},
					Labels: d.Labels, Ready: d.Status.NumberAvailable, Desired: d.Status.DesiredNumberScheduled, Deleting: d.DeletionTimestamp != nil,
					ServiceAccount: serviceAccountOf(&d.Spec.Template.Spec), Containers: containersOf(&d.Spec.Template.Spec)})
			}
		}
		return out
	})
}
