/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Family 6: deadlocks with a terminating namespace, beyond Jobs. An owner
// that needs an object of the namespace to clean up (a credential Secret, a
// ConfigMap, the ServiceAccount it authenticates as) cannot get it back once
// the namespace's deletion took it: NamespaceLifecycle refuses to create
// anything in a terminating namespace. The object names what it needs; what
// is gone, and where it can no longer be recreated, is the deadlock, and
// the remedy that remains is said.

// Need is an object the target names as something its owner reads.
type Need struct {
	Kind, Namespace, Name string
	// Via is where the target names it: "spec.importCredentialsSecret.name",
	// "annotation serviceoperator.azure.com/credential-from".
	Via string
}

// String is "Secret test/test-creds (spec.importCredentialsSecret.name)".
func (n Need) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", n.Kind, n.Namespace, n.Name, n.Via)
}

// Needs finds the Secrets, ConfigMaps and ServiceAccounts obj names in its
// spec (secretName, ...SecretRef.name, a "name" beside kind: Secret,
// serviceAccountName, ...) and its annotations (a key naming a credential
// or a secret), in obj's namespace unless a sibling "namespace" says
// another.
func Needs(obj *unstructured.Unstructured) []Need {
	var out []Need
	seen := map[string]bool{}
	add := func(kind, ns, name, via string) {
		if name == "" || len(validation.IsDNS1123Subdomain(name)) > 0 || seen[kind+"/"+ns+"/"+name] {
			return
		}
		seen[kind+"/"+ns+"/"+name] = true
		out = append(out, Need{Kind: kind, Namespace: ns, Name: name, Via: via})
	}
	if spec, ok := obj.Object["spec"].(map[string]any); ok {
		walk(spec, "spec", func(f field) {
			kind := needKind(f)
			if kind == "" {
				return
			}
			ns := obj.GetNamespace()
			if s, said := f.Siblings["namespace"]; said && s != "" && f.Key == "name" {
				ns = s
			}
			add(kind, ns, f.Value, f.Path)
		})
	}
	annotations := obj.GetAnnotations()
	for _, k := range sortedKeys(annotations) {
		_, name, _ := strings.Cut(k, "/")
		fk := lower(name)
		if strings.Contains(fk, "credential") || strings.HasSuffix(fk, "secret") || strings.HasSuffix(fk, "secretname") {
			add("Secret", obj.GetNamespace(), annotations[k], "annotation "+k)
		}
	}
	return out
}

// needKind says which kind a field names, or "".
func needKind(f field) string {
	if k, said := f.Siblings["kind"]; said && f.Key == "name" {
		switch k {
		case "Secret", "ConfigMap", "ServiceAccount":
			return k
		}
		return ""
	}
	key, parent := lower(f.Key), lower(f.Parent)
	switch {
	case strings.HasSuffix(key, "secretname"):
		return "Secret"
	case strings.HasSuffix(key, "configmapname"):
		return "ConfigMap"
	case strings.HasSuffix(key, "serviceaccountname"):
		return "ServiceAccount"
	case key != "name":
		return ""
	case strings.Contains(parent, "configmap"):
		return "ConfigMap"
	case strings.Contains(parent, "serviceaccount"):
		return "ServiceAccount"
	case strings.Contains(parent, "secret") || strings.Contains(parent, "credential"):
		return "Secret"
	}
	return ""
}

// Presence says whether kind namespace/name exists; known is false when it
// could not be read.
type Presence func(kind, namespace, name string) (exists, known bool)

// Deadlock is a need that is gone.
type Deadlock struct {
	Need
	// Terminating: its namespace is being deleted, so it cannot be
	// recreated there.
	Terminating bool
	// Remedy is what remains to do.
	Remedy string
}

// String is the need, then the remedy.
func (d Deadlock) String() string {
	return d.Need.String() + " is gone: " + d.Remedy
}

// NamespaceDeadlocks returns the needs of obj that are gone. ns is obj's
// namespace as read (nil for a cluster-scoped object, or not read): a need
// in it while it terminates is a deadlock the owner cannot leave; a need
// gone elsewhere can still be recreated. Needs that could not be read are
// left out (the engine says what it could not read).
func NamespaceDeadlocks(obj *unstructured.Unstructured, ns *corev1.Namespace, present Presence) []Deadlock {
	var out []Deadlock
	for _, n := range Needs(obj) {
		exists, known := present(n.Kind, n.Namespace, n.Name)
		if exists || !known {
			continue
		}
		d := Deadlock{Need: n}
		if ns != nil && ns.Name == n.Namespace && ns.DeletionTimestamp != nil {
			d.Terminating = true
			d.Remedy = fmt.Sprintf("it went with namespace %s, which is being deleted, and nothing can be created there again (NamespaceLifecycle): the owner cannot finish. Undo by hand what its cleanup would do, then remove the finalizer", n.Namespace)
		} else {
			d.Remedy = fmt.Sprintf("recreate %s %s/%s and the owner can finish", n.Kind, n.Namespace, n.Name)
		}
		out = append(out, d)
	}
	return out
}
