/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// now is the tests' clock: every timestamp in a fixture is relative to it.
var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// obj parses a YAML fixture into an unstructured object.
func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("fixture: %v\n%s", err, doc)
	}
	return &unstructured.Unstructured{Object: m}
}

// objs parses several fixtures.
func objs(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		out = append(out, obj(t, d))
	}
	return out
}

// typed parses a YAML fixture into a typed object.
func typed[T any](t *testing.T, doc string) *T {
	t.Helper()
	v := new(T)
	if err := yaml.Unmarshal([]byte(doc), v); err != nil {
		t.Fatalf("fixture: %v\n%s", err, doc)
	}
	return v
}

// ago is a timestamp d before now, as the API writes it.
func ago(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }

// in is a timestamp d after now.
func in(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
