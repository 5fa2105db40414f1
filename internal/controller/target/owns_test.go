/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package target

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func TestOwns(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	const key, old = "shop.teardown.dev/dns", "old.example.com/dns"
	pol := &policy.Policy{
		Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "shop", Name: "dns"}, Key: key,
		Targets: []policy.Target{{GVK: cm, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}},
	}
	current := policy.ServedKey{Key: key, Kinds: []schema.GroupVersionKind{cm}}
	retired := policy.ServedKey{Key: old, Kinds: []schema.GroupVersionKind{cm}, Retired: true}
	s := &policy.Served{Policy: pol, Keys: []policy.ServedKey{current, retired}}
	obj := func(ns string, lbls map[string]string, annotations map[string]string, finalizers ...string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x", Labels: lbls, Annotations: annotations, Finalizers: finalizers}}
	}
	web := map[string]string{"app": "web"}
	other := map[string]string{"app": "other"}
	cases := map[string]struct {
		key  policy.ServedKey
		gvk  schema.GroupVersionKind
		obj  *metav1.PartialObjectMetadata
		want bool
	}{
		"selected and carrying it":          {current, cm, obj("shop", web, nil, key), true},
		"not carrying it":                   {current, cm, obj("shop", web, nil), false},
		"another namespace":                 {current, cm, obj("elsewhere", web, nil, key), false},
		"a kind it does not serve":          {current, secret, obj("shop", web, nil, key), false},
		"not selected, not attached":        {current, cm, obj("shop", other, nil, key), false},
		"not selected, attached by us":      {current, cm, obj("shop", other, map[string]string{finalizer.AttachedAnnotation(key): "true"}, key), true},
		"not selected, cleanup started":     {current, cm, obj("shop", other, map[string]string{finalizer.ProgressAnnotation(key): "{}"}, key), true},
		"retired key of an earlier version": {retired, cm, obj("shop", other, nil, old), true},
		"retired key in another namespace":  {retired, cm, obj("elsewhere", other, nil, old), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Owns(s, tc.key, tc.gvk, tc.obj, nil); got != tc.want {
				t.Errorf("Owns = %v, want %v", got, tc.want)
			}
		})
	}
}
