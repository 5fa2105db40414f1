/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// TestDeletions: a watch signals when an object starts being deleted, and
// when one being deleted changes or goes; a change of a live object is no
// signal.
func TestDeletions(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	live := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "live", Finalizers: []string{"example.com/x"}}}
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, live)
	c := kube.New(kube.Clients{Metadata: client})
	changes := c.Deletions(t.Context(), []kube.APIResource{{GVR: gvr, Kind: "ConfigMap", Namespaced: true}}, "shop", "")
	time.Sleep(100 * time.Millisecond) // the watch is open
	res := client.Resource(gvr).Namespace("shop")
	signalled := func() bool {
		select {
		case <-changes:
			return true
		case <-time.After(300 * time.Millisecond):
			return false
		}
	}
	if _, err := res.Patch(t.Context(), "live", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"web"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if signalled() {
		t.Error("a live object's change signalled")
	}
	deleting := `{"metadata":{"deletionTimestamp":"` + time.Now().UTC().Format(time.RFC3339) + `"}}`
	if _, err := res.Patch(t.Context(), "live", types.MergePatchType, []byte(deleting), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if !signalled() {
		t.Error("an object that started being deleted did not signal")
	}
	if err := res.Delete(t.Context(), "live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !signalled() {
		t.Error("an object being deleted that went did not signal")
	}
}
