/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper answers RESTMapping from a DefaultRESTMapper it can
// change, and counts the calls.
type countingMapper struct {
	*meta.DefaultRESTMapper
	restMappings int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.restMappings++
	return c.DefaultRESTMapper.RESTMapping(gk, versions...)
}

// TestRememberingMapper: a repeated RESTMapping of one version is answered
// without the wrapped mapper; any other call to it (after which the lazy
// mapper may have reloaded) makes the next RESTMapping ask again, and see
// what changed; what a caller does to its answer changes nothing remembered.
func TestRememberingMapper(t *testing.T) {
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	gk := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	inner := &countingMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})}
	inner.Add(gv.WithKind("Widget"), meta.RESTScopeNamespace)
	m := &rememberingMapper{RESTMapper: inner}

	scope := func() meta.RESTScopeName {
		t.Helper()
		got, err := m.RESTMapping(gk, "v1")
		if err != nil {
			t.Fatalf("RESTMapping: %v", err)
		}
		return got.Scope.Name()
	}
	for range 3 {
		if got := scope(); got != meta.RESTScopeNameNamespace {
			t.Fatalf("scope %q, want Namespace", got)
		}
	}
	if inner.restMappings != 1 {
		t.Errorf("three RESTMapping calls reached the wrapped mapper %d times, want 1", inner.restMappings)
	}

	got, _ := m.RESTMapping(gk, "v1")
	got.Resource.Resource = "changed"
	if again, _ := m.RESTMapping(gk, "v1"); again.Resource.Resource != "widgets" {
		t.Errorf("resource %q after a caller changed its answer, want widgets", again.Resource.Resource)
	}

	// The kind becomes cluster-scoped (a CRD made again); a call that may
	// reload reaches the wrapped mapper.
	inner.Add(gv.WithKind("Widget"), meta.RESTScopeRoot)
	if _, err := m.KindFor(gv.WithResource("widgets")); err != nil {
		t.Fatalf("KindFor: %v", err)
	}
	if got := scope(); got != meta.RESTScopeNameRoot {
		t.Errorf("scope %q after a call that may reload, want Root", got)
	}

	if _, err := m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Gadget"}, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("RESTMapping of an unknown kind: %v, want a no-match error", err)
	}
	before := inner.restMappings
	_, _ = m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Gadget"}, "v1")
	if inner.restMappings != before+1 {
		t.Errorf("a kind that did not map is asked again: %d calls, want %d", inner.restMappings, before+1)
	}
}
