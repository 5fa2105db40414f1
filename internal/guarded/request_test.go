/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package guarded

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/queuekey"
)

// A watch event queues the key queuekey.For builds for the object, so that
// it and a Wake of the same object are one queue entry.
func TestToRequest(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	obj.SetGroupVersionKind(cm)
	if got := toRequest(t.Context(), obj)[0]; got != queuekey.For(cm, key) {
		t.Errorf("toRequest = %v, want queuekey.For's %v", got, queuekey.For(cm, key))
	}
}
