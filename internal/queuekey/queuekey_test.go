/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package queuekey

import (
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The queues deduplicate by key equality: two Requests for the same object
// built apart (a watch event, a resync, a Wake) must be equal, and the kind
// must come back whole.
func TestFor(t *testing.T) {
	// Strings built at run time, so that equal kinds do not share storage.
	group := string([]byte("apps"))
	deploy := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Deployment"}
	sameDeploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: string([]byte("Deployment"))}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	key := types.NamespacedName{Namespace: "shop", Name: "web"}

	a, b := For(deploy, key), For(sameDeploy, key)
	if a != b {
		t.Errorf("For(%v) != For(%v) for the same object", deploy, sameDeploy)
	}
	if got := a.GVK(); got != deploy {
		t.Errorf("GVK() = %v, want %v", got, deploy)
	}
	if a == For(cm, key) {
		t.Error("Requests for two kinds are equal")
	}
	if a == For(deploy, types.NamespacedName{Namespace: "shop", Name: "db"}) {
		t.Error("Requests for two names are equal")
	}
	if a == For(deploy, types.NamespacedName{Namespace: "bank", Name: "web"}) {
		t.Error("Requests for two namespaces are equal")
	}
	if got := a.Key(); got != key {
		t.Errorf("Key() = %v, want %v", got, key)
	}
	// The point of interning the kind and namespace: a name and one pointer.
	if size, want := unsafe.Sizeof(Request{}), unsafe.Sizeof(key.Name)+unsafe.Sizeof(uintptr(0)); size != want {
		t.Errorf("a Request takes %d bytes, want %d", size, want)
	}
}
