/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/policy"
)

func TestWaitGraphCycle(t *testing.T) {
	cm := func(name string) WaitRef {
		return WaitRef{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "ns", Name: name}
	}
	wait := func(target string, on ...string) Wait {
		w := Wait{Target: cm(target), Policy: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p-" + target}, Step: "s", Action: ActionWait}
		for _, o := range on {
			w.On = append(w.On, cm(o))
		}
		return w
	}
	failing := func(w Wait) Wait { w.Failure = "connection refused"; return w }
	cases := map[string]struct {
		waits []Wait
		want  []string // the cycle from "a", by target
	}{
		"two waiting on each other":       {waits: []Wait{wait("a", "b"), wait("b", "a")}, want: []string{"a", "b"}},
		"three in a ring":                 {waits: []Wait{wait("a", "b"), wait("b", "c"), wait("c", "a")}, want: []string{"a", "b", "c"}},
		"a chain that ends":               {waits: []Wait{wait("a", "b"), wait("b", "c")}},
		"a cycle a is not part of":        {waits: []Wait{wait("a", "b"), wait("b", "c"), wait("c", "b")}},
		"waiting on an object untracked":  {waits: []Wait{wait("a", "x")}},
		"one of several waits leads back": {waits: []Wait{wait("a", "x", "y", "b"), wait("b", "a")}, want: []string{"a", "b"}},
		"a failing link waits on nothing": {waits: []Wait{wait("a", "b"), failing(wait("b", "a"))}},
		"a itself failing":                {waits: []Wait{failing(wait("a", "b")), wait("b", "a")}},
		"no wait for a":                   {waits: []Wait{wait("b", "a")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := NewWaiting()
			for _, v := range tc.waits {
				w.set("k-"+v.Target.Name, types.UID(v.Target.Name), v)
			}
			cycle, ok := w.Graph().Cycle("k-a", "a")
			if ok != (tc.want != nil) {
				t.Fatalf("Cycle found %v (%v), want %v", ok, cycle, tc.want)
			}
			var got []string
			for _, c := range cycle {
				got = append(got, c.Target.Name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("cycle %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("cycle %v, want %v", got, tc.want)
				}
			}
		})
	}
}
