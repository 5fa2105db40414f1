/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConditionReads(t *testing.T) {
	for expr, want := range map[string]string{
		"size(objects) == 0":                                                          "",
		"objects.size() < 3":                                                          "",
		"objects.all(o, o.status.phase == 'Succeeded')":                               "{status{phase*}}",
		"objects.exists(o, o.metadata.labels['app'] == 'x')":                          "{metadata{labels{app*}}}",
		"objects.filter(o, o.status.phase != 'Succeeded').size() == 0":                "{status{phase*}}",
		"objects.map(o, o.metadata.name).exists(n, n == 'a')":                         "{metadata{name*}}",
		"objects.all(o, has(o.status.ready))":                                         "{status{ready*}}",
		"objects.all(o, o.status.conditions.exists(c, c.type == 'Ready'))":            "{status{conditions*}}",
		"objects.all(o, size(o.data) == 0)":                                           "{data*}",
		"objects[0].metadata.name == 'a'":                                             "{metadata{name*}}",
		"objects.all(o, o == {})":                                                     "*",
		"objects == []":                                                               "*",
		"objects.all(i, o, o.spec.x == i)":                                            "{spec{x*}}",
		"objects.all(o, o.data[o.metadata.name] == 'x')":                              "{data*,metadata{name*}}",
		"objects.all(o, o.?spec.x.orValue(1) == 1)":                                   "{spec{x*}}",
		"objects.all(o, o.metadata.name != '') && objects.exists(o, o.status.x == 1)": "{metadata{name*},status{x*}}",
	} {
		got, err := ConditionReads(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if diff := cmp.Diff(want, got.String()); diff != "" {
			t.Errorf("%s reads (-want +got):\n%s", expr, diff)
		}
	}
}

func TestFieldsProject(t *testing.T) {
	f, err := ConditionReads("objects.all(o, o.status.phase == 'Succeeded' && o.metadata.name != '')")
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "a", "annotations": map[string]any{"big": "xxxx"}},
		"spec":     map[string]any{"containers": []any{"..."}},
		"status":   map[string]any{"phase": "Running", "conditions": []any{}},
	}
	want := map[string]any{"metadata": map[string]any{"name": "a"}, "status": map[string]any{"phase": "Running"}}
	if diff := cmp.Diff(want, f.Project(obj)); diff != "" {
		t.Errorf("projected (-want +got):\n%s", diff)
	}
	if f.MetadataOnly() {
		t.Error("MetadataOnly() for a condition that reads status")
	}
	var none *Fields
	if !none.MetadataOnly() || len(none.Project(obj)) != 0 {
		t.Error("a condition that reads nothing keeps something")
	}
}
