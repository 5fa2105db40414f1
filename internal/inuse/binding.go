/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Binding is what the index keeps of a RoleBinding or ClusterRoleBinding:
// the role it grants and the subjects that name pods.
type Binding struct {
	// Namespace is empty for a ClusterRoleBinding.
	Namespace, Name, ResourceVersion string
	// RoleKind is Role or ClusterRole.
	RoleKind, RoleName string
	// Subjects are the keys of the pods the binding grants to (podsOf
	// keys), sorted, without duplicates; subjects that name no pod are
	// left out.
	Subjects []string
}

// GetObjectMeta lets the informer's store key the binding (meta.Accessor).
func (b *Binding) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name, ResourceVersion: b.ResourceVersion}
}

// Kind is RoleBinding or ClusterRoleBinding.
func (b *Binding) Kind() string {
	if b.Namespace == "" {
		return "ClusterRoleBinding"
	}
	return "RoleBinding"
}

func (b *Binding) equal(c *Binding) bool {
	return b.Namespace == c.Namespace && b.Name == c.Name && b.RoleKind == c.RoleKind && b.RoleName == c.RoleName &&
		slices.Equal(b.Subjects, c.Subjects)
}

// Pod keys: what a subject names, as the pod index is keyed.
const (
	// allPods is the group every ServiceAccount is in.
	allPods = "pods"
	// podsInPrefix starts the key of the pods of one namespace.
	podsInPrefix = "pods-in/"
	// serviceAccountPrefix starts the key of the pods that run as one
	// ServiceAccount.
	serviceAccountPrefix = "ServiceAccount/"
)

// serviceAccountKey is the key of the pods that run as ServiceAccount
// ns/name.
func serviceAccountKey(ns, name string) string { return serviceAccountPrefix + ns + "/" + name }

// BindingOf reduces a RoleBinding to what the index keeps.
func BindingOf(rb *rbacv1.RoleBinding) *Binding {
	return bindingOf(rb.Namespace, rb.Name, rb.ResourceVersion, rb.RoleRef, rb.Subjects)
}

// ClusterBindingOf reduces a ClusterRoleBinding to what the index keeps.
func ClusterBindingOf(crb *rbacv1.ClusterRoleBinding) *Binding {
	return bindingOf("", crb.Name, crb.ResourceVersion, crb.RoleRef, crb.Subjects)
}

func bindingOf(ns, name, rv string, role rbacv1.RoleRef, subjects []rbacv1.Subject) *Binding {
	b := &Binding{Namespace: intern(ns), Name: name, ResourceVersion: rv, RoleKind: intern(role.Kind), RoleName: role.Name}
	for _, s := range subjects {
		if key := subjectKey(ns, s); key != "" {
			b.Subjects = append(b.Subjects, key)
		}
	}
	slices.Sort(b.Subjects)
	b.Subjects = slices.Compact(b.Subjects)
	for i, s := range b.Subjects {
		b.Subjects[i] = intern(s)
	}
	return b
}

// subjectKey is the pod key of the pods a subject of a binding in namespace
// ns names, as the RBAC authorizer matches a pod's credentials: a
// ServiceAccount (its namespace defaults to the binding's), the user name of
// one, the group of every ServiceAccount or of one namespace's. Other users
// and groups name no pod; neither does system:authenticated, which every pod
// is in: holding on it would hold while any pod in the cluster runs.
func subjectKey(ns string, s rbacv1.Subject) string {
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		saNamespace := s.Namespace
		if saNamespace == "" {
			saNamespace = ns
		}
		if saNamespace == "" || s.Name == "" {
			return ""
		}
		return serviceAccountKey(saNamespace, s.Name)
	case rbacv1.UserKind:
		rest, ok := strings.CutPrefix(s.Name, "system:serviceaccount:")
		if !ok {
			return ""
		}
		saNamespace, name, ok := strings.Cut(rest, ":")
		if !ok || saNamespace == "" || name == "" || strings.Contains(name, ":") {
			return ""
		}
		return serviceAccountKey(saNamespace, name)
	case rbacv1.GroupKind:
		if s.Name == "system:serviceaccounts" {
			return allPods
		}
		if saNamespace, ok := strings.CutPrefix(s.Name, "system:serviceaccounts:"); ok && saNamespace != "" && !strings.Contains(saNamespace, ":") {
			return podsInPrefix + saNamespace
		}
	}
	return ""
}
