/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package queuekey is the key of the guarded objects' work queues: one object
// of one kind. It is its own package, below internal/guarded, internal/steps
// and internal/waits, because all three name objects by it (the steps and the
// waits wake an object's reconcile), and none may import a layer above.
package queuekey

import (
	"unique"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Request names one target object of one kind: it is the work queues' key.
//
// Its kind and namespace are interned together, one 8-byte handle beside
// the name, 24 bytes in all: controller-runtime's priority queue keeps two
// maps keyed by Request, and Go maps keep their size after a burst, so
// after N objects were queued at once every byte of the key stays
// allocated N times over. Kinds times namespaces are few; the name is not
// interned, because names are as many as objects and unique.Make copies
// each one and keeps an entry for it while it is queued, more than its 16
// bytes save in the maps afterwards.
type Request struct {
	where unique.Handle[kindInNamespace]
	name  string
}

// kindInNamespace is what the Requests of many objects share.
type kindInNamespace struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// For names the object key of kind gvk. Code outside this package builds
// Requests only with it, so the key's layout can change in one place.
func For(gvk schema.GroupVersionKind, key types.NamespacedName) Request {
	return Request{where: unique.Make(kindInNamespace{gvk: gvk, namespace: key.Namespace}), name: key.Name}
}

// GVK is the kind of the object.
func (r Request) GVK() schema.GroupVersionKind { return r.where.Value().gvk }

// Key is the object's namespace and name.
func (r Request) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.where.Value().namespace, Name: r.name}
}

// String is the kind and key, for logs.
func (r Request) String() string { return r.GVK().Kind + " " + r.Key().String() }
