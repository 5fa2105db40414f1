/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"slices"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pod is what the index keeps of a pod: only what says whether it counts
// and what it uses. Strings shared by many pods (namespace, owner,
// ServiceAccount, Secret and ConfigMap names) are interned.
type Pod struct {
	Namespace, Name string
	// ResourceVersion is kept because the informer tells updates from
	// resyncs by it: without it every update would look like a resync.
	ResourceVersion string
	UID             types.UID
	// OwnerKind and OwnerName name the pod's controller (a DaemonSet, a
	// ReplicaSet, ...); empty when it has none.
	OwnerKind, OwnerName string
	// ServiceAccount is the one the pod runs as ("default" when unset).
	ServiceAccount string
	// Secrets and ConfigMaps are the names of those of its namespace the
	// pod references, sorted, without duplicates.
	Secrets, ConfigMaps []string
	// Deleting: the pod has a deletionTimestamp.
	Deleting bool
	// Finished: the pod's phase is Succeeded or Failed.
	Finished bool
}

// Counts reports whether the pod holds what it uses: every pod that exists,
// except one that finished (no container of it runs again) and is not being
// deleted. A pod being deleted counts until it is gone, whatever its phase:
// its containers may still be shutting down.
func (p *Pod) Counts() bool { return p.Deleting || !p.Finished }

// GetObjectMeta lets the informer's store key the pod (meta.Accessor).
func (p *Pod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, ResourceVersion: p.ResourceVersion, UID: p.UID}
}

// equal reports whether two records say the same about use: a change of
// anything else (labels, status details) wakes nobody.
func (p *Pod) equal(q *Pod) bool {
	return p.Namespace == q.Namespace && p.Name == q.Name && p.UID == q.UID && p.OwnerKind == q.OwnerKind &&
		p.OwnerName == q.OwnerName && p.ServiceAccount == q.ServiceAccount && slices.Equal(p.Secrets, q.Secrets) &&
		slices.Equal(p.ConfigMaps, q.ConfigMaps) && p.Deleting == q.Deleting && p.Finished == q.Finished
}

// intern returns the canonical copy of s, so that a name used by many pods
// is stored once.
func intern(s string) string { return unique.Make(s).Value() }

// PodOf reduces a pod to what the index keeps. Pods are written by users:
// any shape the API server stores (nil pointers anywhere, empty names) is
// accepted, and empty names are ignored.
func PodOf(pod *corev1.Pod) *Pod {
	p := &Pod{
		Namespace: intern(pod.Namespace), Name: pod.Name, ResourceVersion: pod.ResourceVersion, UID: pod.UID,
		Deleting: pod.DeletionTimestamp != nil,
		Finished: pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed,
	}
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil {
		p.OwnerKind, p.OwnerName = intern(owner.Kind), intern(owner.Name)
	}
	spec := &pod.Spec
	p.ServiceAccount = spec.ServiceAccountName
	if p.ServiceAccount == "" {
		// Only set by clients that predate serviceAccountName; the API
		// server copies it over anyway.
		p.ServiceAccount = spec.DeprecatedServiceAccount //nolint:staticcheck // still honoured by the API server
	}
	if p.ServiceAccount == "" {
		p.ServiceAccount = "default"
	}
	p.ServiceAccount = intern(p.ServiceAccount)
	var refs references
	for _, s := range spec.ImagePullSecrets {
		refs.secret(s.Name)
	}
	for i := range spec.Volumes {
		refs.volume(&spec.Volumes[i].VolumeSource)
	}
	for i := range spec.InitContainers {
		refs.env(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		refs.env(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		refs.env(c.Env, c.EnvFrom)
	}
	p.Secrets, p.ConfigMaps = refs.sorted(refs.secrets), refs.sorted(refs.configMaps)
	return p
}

// references collects the Secret and ConfigMap names a pod references.
type references struct{ secrets, configMaps []string }

func (r *references) secret(name string) {
	if name != "" {
		r.secrets = append(r.secrets, name)
	}
}

func (r *references) configMap(name string) {
	if name != "" {
		r.configMaps = append(r.configMaps, name)
	}
}

func (r *references) secretRef(ref *corev1.LocalObjectReference) {
	if ref != nil {
		r.secret(ref.Name)
	}
}

// volume collects what a volume reads: Secret and ConfigMap volumes and
// projections, and the Secrets volume plugins authenticate with.
// optional: true references count too: the pod reads them when present.
func (r *references) volume(v *corev1.VolumeSource) {
	// Each source on its own: the API server allows one per volume, and a
	// record that somehow had two must hold for both.
	if v.Secret != nil {
		r.secret(v.Secret.SecretName)
	}
	if v.ConfigMap != nil {
		r.configMap(v.ConfigMap.Name)
	}
	if v.Projected != nil {
		for _, src := range v.Projected.Sources {
			if src.Secret != nil {
				r.secret(src.Secret.Name)
			}
			if src.ConfigMap != nil {
				r.configMap(src.ConfigMap.Name)
			}
		}
	}
	if v.CSI != nil {
		r.secretRef(v.CSI.NodePublishSecretRef)
	}
	if v.AzureFile != nil {
		r.secret(v.AzureFile.SecretName)
	}
	if v.CephFS != nil {
		r.secretRef(v.CephFS.SecretRef)
	}
	if v.Cinder != nil {
		r.secretRef(v.Cinder.SecretRef)
	}
	if v.FlexVolume != nil {
		r.secretRef(v.FlexVolume.SecretRef)
	}
	if v.ISCSI != nil {
		r.secretRef(v.ISCSI.SecretRef)
	}
	if v.RBD != nil {
		r.secretRef(v.RBD.SecretRef)
	}
	if v.ScaleIO != nil {
		r.secretRef(v.ScaleIO.SecretRef)
	}
	if v.StorageOS != nil {
		r.secretRef(v.StorageOS.SecretRef)
	}
}

// env collects what a container's environment reads.
func (r *references) env(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			r.secret(ref.Name)
		}
		if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
			r.configMap(ref.Name)
		}
	}
	for _, e := range envFrom {
		if e.SecretRef != nil {
			r.secret(e.SecretRef.Name)
		}
		if e.ConfigMapRef != nil {
			r.configMap(e.ConfigMapRef.Name)
		}
	}
}

// sorted returns names sorted, without duplicates, interned, in a slice of
// their own size; nil when there are none.
func (r *references) sorted(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = intern(n)
	}
	return out
}
