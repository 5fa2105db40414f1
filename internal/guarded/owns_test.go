/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package guarded

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
		Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "shop", Name: "dns"}, Key: key, UID: "policy-uid",
		Targets: []policy.Selector{{GVK: cm, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}},
	}
	current := policy.ServedKey{Key: key, Kinds: []schema.GroupVersionKind{cm}}
	retired := policy.ServedKey{Key: old, Kinds: []schema.GroupVersionKind{cm}, Retired: true}
	s := &policy.Served{Policy: pol, Keys: []policy.ServedKey{current, retired}}
	const uid = "8a6f2e1c-0000-4000-8000-000000000001"
	obj := func(ns string, lbls map[string]string, annotations map[string]string, finalizers ...string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x", UID: uid, Labels: lbls, Annotations: annotations, Finalizers: finalizers}}
	}
	finishing := current
	finishing.Finishing = true
	web := map[string]string{"app": "web"}
	other := map[string]string{"app": "other"}
	attachedTo := func(k, value string) map[string]string {
		return map[string]string{finalizer.AttachedAnnotation(k): value}
	}
	cases := map[string]struct {
		key     policy.ServedKey
		gvk     schema.GroupVersionKind
		obj     *metav1.PartialObjectMetadata
		started bool
		want    bool
	}{
		"selected and carrying it":                    {current, cm, obj("shop", web, nil, key), false, true},
		"not carrying it":                             {current, cm, obj("shop", web, nil), false, false},
		"another namespace":                           {current, cm, obj("elsewhere", web, nil, key), false, false},
		"a kind it does not serve":                    {current, secret, obj("shop", web, nil, key), false, false},
		"not selected, not attached":                  {current, cm, obj("shop", other, nil, key), false, false},
		"not selected, record of another object":      {current, cm, obj("shop", other, attachedTo(key, "another-uid"), key), false, false},
		"not selected, record written at CREATE":      {current, cm, obj("shop", other, attachedTo(key, finalizer.AttachedAtCreate), key), false, false},
		"not selected, legacy record":                 {current, cm, obj("shop", other, attachedTo(key, "true"), key), false, false},
		"not selected, a progress record is no proof": {current, cm, obj("shop", other, map[string]string{finalizer.ProgressAnnotation(key): "{}"}, key), false, false},
		"not selected, this policy started it":        {current, cm, obj("shop", other, nil, key), true, true},
		"not selected, attached to it by this policy": {current, cm, obj("shop", other, attachedTo(key, uid+"/policy-uid"), key), false, true},
		"not selected, attached by another policy":    {current, cm, obj("shop", other, attachedTo(key, uid+"/another-policy"), key), false, false},
		"not selected, attached naming no policy":     {current, cm, obj("shop", other, attachedTo(key, uid), key), false, false},
		"retired key attached to it by this policy":   {retired, cm, obj("shop", other, attachedTo(old, uid+"/policy-uid"), old), false, true},
		"retired key without a record":                {retired, cm, obj("shop", web, nil, old), false, false},
		"retired key in another namespace":            {retired, cm, obj("elsewhere", other, attachedTo(old, uid+"/policy-uid"), old), false, false},
		"yielded key, selected, attached by another":  {finishing, cm, obj("shop", web, attachedTo(key, uid+"/another-policy"), key), false, false},
		"yielded key, attached to it by this policy":  {finishing, cm, obj("shop", other, attachedTo(key, uid+"/policy-uid"), key), false, true},
		"yielded key, this policy started it":         {finishing, cm, obj("shop", web, nil, key), true, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			proofs := testProofs{}
			if tc.started {
				proofs.started = pol.UID
			}
			if got := Owns(s, tc.key, tc.gvk, tc.obj, nil, ProvenBy(tc.obj, tc.key.Key, proofs)); got != tc.want {
				t.Errorf("Owns = %v, want %v", got, tc.want)
			}
		})
	}
}
