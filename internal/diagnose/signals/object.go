/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

// maxText bounds any text of an object repeated in a signal: conditions,
// messages and annotations are written by others and can be any length.
const maxText = 300

// Ref names an object.
type Ref struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// String is "Kind namespace/name" (or "Kind name" when cluster-scoped).
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// RefOf names obj.
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// condition is one entry of status.conditions, as any controller writes it.
type condition struct {
	Type, Status, Reason, Message string
	// Transition is lastTransitionTime (zero when absent or unparsable).
	Transition time.Time
	// Heartbeat is lastHeartbeatTime, lastProbeTime or lastUpdateTime,
	// whichever is newest (zero when none).
	Heartbeat time.Time
}

// String is "Type=Status (Reason: message)", cleaned and bounded.
func (c condition) String() string {
	s := c.Type + "=" + c.Status
	switch {
	case c.Reason != "" && c.Message != "":
		s += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
	case c.Reason != "":
		s += " (" + c.Reason + ")"
	case c.Message != "":
		s += " (" + c.Message + ")"
	}
	return cleantext.Clean(s, maxText)
}

// ConditionMessages are the messages of obj's conditions, in order: an
// owner's words, whatever the condition says.
func ConditionMessages(obj *unstructured.Unstructured) []string {
	var out []string
	for _, c := range conditionsOf(obj) {
		if c.Message != "" {
			out = append(out, c.Message)
		}
	}
	return out
}

// conditionsOf reads status.conditions; entries that are not objects, or
// have no type, are skipped.
func conditionsOf(obj *unstructured.Unstructured) []condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	out := make([]condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := condition{Type: str(m["type"]), Status: str(m["status"]), Reason: str(m["reason"]), Message: str(m["message"])}
		if c.Type == "" {
			continue
		}
		c.Transition = timeOf(m["lastTransitionTime"])
		for _, k := range []string{"lastHeartbeatTime", "lastProbeTime", "lastUpdateTime"} {
			if t := timeOf(m[k]); t.After(c.Heartbeat) {
				c.Heartbeat = t
			}
		}
		out = append(out, c)
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func timeOf(v any) time.Time {
	s, ok := v.(string)
	if !ok || s == "" {
		return time.Time{}
	}
	var t metav1.Time
	if err := t.UnmarshalQueryParameter(s); err != nil {
		return time.Time{}
	}
	return t.Time
}

// field is one leaf of an object found by walk.
type field struct {
	// Path is "spec.source.persistentVolumeClaimName" ("[]" for list items).
	Path string
	// Key is the leaf's own key ("persistentVolumeClaimName"); Parent is
	// the key of the map that holds it ("source"), or of the list holding
	// that map.
	Key, Parent string
	Value       string
	// Siblings are the string fields of the map that holds the leaf.
	Siblings map[string]string
}

// Bounds of walk: an object is written by others and can be any size; what
// a pass reads of it is bounded.
const (
	maxDepth  = 8
	maxFields = 2000
)

// walk visits the string leaves under root (a map of an unstructured
// object), depth-first in key order, within maxDepth and maxFields.
func walk(root map[string]any, prefix string, visit func(field)) {
	n := 0
	var rec func(m map[string]any, path, parent string, depth int)
	rec = func(m map[string]any, path, parent string, depth int) {
		if depth > maxDepth {
			return
		}
		siblings := map[string]string{}
		for k, v := range m {
			if s, ok := v.(string); ok {
				siblings[k] = s
			}
		}
		for _, k := range sortedKeys(m) {
			if n >= maxFields {
				return
			}
			p := k
			if path != "" {
				p = path + "." + k
			}
			switch v := m[k].(type) {
			case string:
				n++
				visit(field{Path: p, Key: k, Parent: parent, Value: v, Siblings: siblings})
			case map[string]any:
				rec(v, p, k, depth+1)
			case []any:
				for _, item := range v {
					switch it := item.(type) {
					case map[string]any:
						rec(it, p+"[]", k, depth+1)
					case string:
						n++
						visit(field{Path: p + "[]", Key: k, Parent: parent, Value: it, Siblings: siblings})
					}
				}
			}
		}
	}
	rec(root, prefix, "", 0)
}

// lower folds a key for matching: lower case, without "-", "_" and ".".
func lower(s string) string {
	return strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(s))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
