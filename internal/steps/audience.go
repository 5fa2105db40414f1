/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Audience is who reads what the controller writes about a target: the
// progress and step records on it and the Events regarding it. Whoever may
// read an object of a namespace may read those, a tenant of the namespace
// perhaps, who may not list other namespaces or cluster-scoped objects;
// so a message there names only objects of that namespace and counts the
// others. A Namespace's own readers are those of the namespace (a
// RoleBinding granting view there lets one get it). Any other
// cluster-scoped object is read at cluster level, and its messages name
// anything.
//
// Every step's message goes through MayName: pods that use an unused
// step's target (inuse.DescribeFor), a delete step's remaining objects, a
// job step's Job. What the controller keeps for its diagnosis (Wait.On) is
// not filtered here: the diagnosis writes to a ClusterTeardownPolicy's
// status, read at cluster level, and filters its Event on the object.
type Audience struct {
	// Namespace is the one namespace whose objects a message may name;
	// "" when it may name every object.
	Namespace string
}

// AudienceOf returns who reads the messages on obj, an object of kind gvk.
func AudienceOf(gvk schema.GroupVersionKind, obj metav1.Object) Audience {
	if ns := obj.GetNamespace(); ns != "" {
		return Audience{Namespace: ns}
	}
	if gvk.Group == "" && gvk.Kind == "Namespace" {
		return Audience{Namespace: obj.GetName()}
	}
	return Audience{}
}

func audienceOf(t Object) Audience { return AudienceOf(t.GVK, t.Obj) }

// MayName reports whether a message a reads may name an object of
// namespace ns ("" for a cluster-scoped object). It is the one rule: an
// object is named only where its reader could list it.
func (a Audience) MayName(ns string) bool { return a.Namespace == "" || ns == a.Namespace }

// Elsewhere says where the objects a message only counts are.
func (a Audience) Elsewhere() string { return "outside namespace " + a.Namespace }

// mention is an object a message may mention: its namespace ("" when
// cluster-scoped) and how it is named ("ConfigMap a/x").
type mention struct {
	namespace, text string
}

// summarizeFor names a few of objs, those a may see, and counts the rest:
// "ConfigMap a/x, ConfigMap a/y, ConfigMap a/z, 2 more and 3 objects
// outside namespace a". With nothing to count it reads "ConfigMap a/x,
// ConfigMap a/y, ConfigMap a/z and 2 more", as the delete step always said.
func (a Audience) summarizeFor(objs []mention) string {
	const shown = 3
	var named []string
	hidden := 0
	for _, o := range objs {
		if a.MayName(o.namespace) {
			named = append(named, o.text)
		} else {
			hidden++
		}
	}
	parts := named[:min(len(named), shown)]
	if more := len(named) - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("%d more", more))
	}
	if hidden > 0 {
		parts = append(parts, a.counted(hidden, "object", "objects"))
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// counted is "3 objects outside namespace a".
func (a Audience) counted(n int, one, many string) string {
	noun := many
	if n == 1 {
		noun = one
	}
	return fmt.Sprintf("%d %s %s", n, noun, a.Elsewhere())
}

// name is how a message on a's target names the object namespace/name of
// kind: by name when a may see it, else as "a Job outside namespace a".
func (a Audience) name(kind, namespace, name string) string {
	if a.MayName(namespace) {
		return objectText(kind, namespace, name)
	}
	return "a " + kind + " " + a.Elsewhere()
}

// objectText names an object: "ConfigMap a/x", "ClusterRole view".
func objectText(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// hide returns err for a message a reads: as it is when the object of
// namespace it is about may be named, else with only the API's reason for
// it (an API error's text names the object). The error is still wrapped,
// so errors.Is and errors.As see it.
func (a Audience) hide(namespace string, err error) error {
	if err == nil || a.MayName(namespace) {
		return err
	}
	return &hiddenError{err: err}
}

// hiddenError is an error whose text is not shown: only its category.
type hiddenError struct{ err error }

func (e *hiddenError) Error() string {
	var status apierrors.APIStatus
	if errors.As(e.err, &status) {
		if reason := status.Status().Reason; reason != "" {
			return "the API server answered " + string(reason)
		}
		return fmt.Sprintf("the API server answered %d", status.Status().Code)
	}
	return "the request failed (its error is not shown: it names the object)"
}

func (e *hiddenError) Unwrap() error { return e.err }
