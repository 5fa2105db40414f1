/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

// Family 1: the object's own "do not proceed" marks. Operators pause the
// reconciliation of one object (an annotation such as
// cluster.x-k8s.io/paused or crossplane.io/paused, a field such as
// spec.suspend, a condition whose reason says paused), or hold its deletion
// behind a lifecycle hook that another controller must clear (an annotation
// whose domain names a hook, a condition that waits for an external hook).
// A healthy controller then never acts on that object: its finalizer stays
// however alive the owner is. These marks are read from the object alone,
// from every condition (not only Ready/Synced) and every annotation.

// Mark is what a signal says the object is held by.
type Mark string

// Marks.
const (
	// MarkPaused: reconciliation of the object is paused.
	MarkPaused Mark = "Paused"
	// MarkSuspended: the object, or its deletion, is suspended.
	MarkSuspended Mark = "Suspended"
	// MarkHook: its deletion waits for a lifecycle hook that another
	// controller must clear.
	MarkHook Mark = "WaitingForHook"
	// MarkBlockedBy: a condition says it is blocked by something.
	MarkBlockedBy Mark = "BlockedBy"
)

// Signal is one "do not proceed" mark read from an object.
type Signal struct {
	Mark Mark
	// Source is where it was read: "annotation crossplane.io/paused",
	// "spec.suspend", "condition Synced=False (ReconcilePaused)".
	Source string
	// Holder is who must clear it, when the object says (a hook's owner).
	Holder string
	// Clear is how a user clears a mark written in the object's metadata
	// or spec ("remove the annotation ..."); "" for a condition, which
	// only says what the controller saw.
	Clear string
	// Since is the condition's last transition (zero when not a condition
	// or not recorded).
	Since time.Time
}

// String is "Paused (annotation cluster.x-k8s.io/paused)".
func (s Signal) String() string {
	out := string(s.Mark) + " (" + s.Source
	if s.Holder != "" {
		out += ", held by " + s.Holder
	}
	return out + ")"
}

// Paused returns every "do not proceed" mark of obj: annotations, the
// spec's pause and suspend switches, and conditions. An object with none
// returns nil.
func Paused(obj *unstructured.Unstructured) []Signal {
	var out []Signal
	annotations := obj.GetAnnotations()
	for _, k := range sortedKeys(annotations) {
		if s, ok := annotationMark(k, annotations[k]); ok {
			out = append(out, s)
		}
	}
	for _, k := range []string{"paused", "pause", "suspend", "suspended"} {
		if on, found := switchOn(obj.Object, "spec", k); found && on {
			m := MarkPaused
			if strings.HasPrefix(k, "suspend") {
				m = MarkSuspended
			}
			out = append(out, Signal{Mark: m, Source: "spec." + k, Clear: "set spec." + k + " to false"})
		}
	}
	for _, c := range conditionsOf(obj) {
		if m, ok := conditionMark(c); ok {
			out = append(out, Signal{Mark: m, Source: "condition " + c.String(), Since: c.Transition})
		}
	}
	return out
}

// falsy are annotation values that switch a mark off.
var falsy = map[string]bool{"false": true, "no": true, "0": true, "off": true, "disabled": true}

// annotationMark reads one annotation: a name that says paused or suspended
// (any value but a false one: Cluster API's paused annotation counts by
// presence), a "reconcile: disabled" switch, a domain that names a hook or
// a suspension (the name after "/" is the hook, the value its owner).
func annotationMark(key, value string) (Signal, bool) {
	domain, name, hasDomain := strings.Cut(key, "/")
	if !hasDomain {
		name, domain = domain, ""
	}
	v := strings.ToLower(strings.TrimSpace(value))
	src := "annotation " + key
	if value != "" {
		src += "=" + cleantext.Clean(value, 80)
	}
	clear := "remove the annotation " + key
	fd, fn := lower(domain), lower(name)
	switch {
	case hook(fd):
		holder := cleantext.Clean(value, 80)
		if holder == "" {
			holder = name
		}
		return Signal{Mark: MarkHook, Source: src, Holder: holder, Clear: "the hook's owner removes the annotation " + key}, true
	case strings.Contains(fd, "suspend"):
		return Signal{Mark: MarkSuspended, Source: src, Holder: cleantext.Clean(value, 80), Clear: clear}, true
	case fn == "reconcile" && v == "disabled":
		return Signal{Mark: MarkPaused, Source: src, Clear: clear}, true
	case falsy[v]:
		return Signal{}, false
	case strings.Contains(fn, "paused") || hasWord(name, "pause"):
		// "paused", "pause", and the pause of reconciliation spelled as
		// words ("pause-reconcile", "pause-reconciliation").
		return Signal{Mark: MarkPaused, Source: src, Clear: clear}, true
	case strings.Contains(fn, "suspend"):
		return Signal{Mark: MarkSuspended, Source: src, Clear: clear}, true
	}
	return Signal{}, false
}

// switchOn reports a boolean (or "true" string) field.
func switchOn(obj map[string]any, path ...string) (on, found bool) {
	v, found, _ := unstructured.NestedFieldNoCopy(obj, path...)
	if !found {
		return false, false
	}
	switch t := v.(type) {
	case bool:
		return t, true
	case string:
		return strings.EqualFold(t, "true"), true
	}
	return false, false
}

// conditionMark reads one condition: a type that says paused or suspended
// and is True, a reason that says so (not "Unpaused", "NotPaused"), a hook
// not yet cleared (a False hook condition, a reason waiting for a hook or
// an external actor), or "blocked by".
func conditionMark(c condition) (Mark, bool) {
	ft, fr := lower(c.Type), lower(c.Reason)
	negated := strings.HasPrefix(fr, "not") || strings.HasPrefix(fr, "un") || strings.Contains(fr, "resumed")
	isTrue := c.Status == "True"
	switch {
	case (strings.Contains(ft, "paused") || strings.Contains(ft, "suspended")) && !isTrue:
		// Paused=False: explicitly not paused.
		return "", false
	case strings.Contains(ft, "suspended"), strings.Contains(fr, "suspended") && !negated:
		return MarkSuspended, true
	case strings.Contains(ft, "paused"), strings.Contains(fr, "paused") && !negated:
		return MarkPaused, true
	case hook(ft+fr) && (!isTrue || strings.Contains(fr, "wait")):
		return MarkHook, true
	case strings.HasPrefix(fr, "waiting") && (strings.Contains(fr, "external") || strings.Contains(fr, "approval")):
		return MarkHook, true
	case strings.Contains(ft, "blocked") && isTrue,
		strings.Contains(fr, "blockedby") && !negated,
		!isTrue && strings.Contains(strings.ToLower(c.Message), "blocked by"):
		return MarkBlockedBy, true
	}
	return "", false
}

// hook reports a folded word naming a lifecycle hook (not a webhook).
func hook(folded string) bool {
	return strings.Contains(strings.ReplaceAll(folded, "webhook", ""), "hook")
}

// hasWord reports whether name, cut into words at "-", "_" and ".", holds
// word (case-insensitive).
func hasWord(name, word string) bool {
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if strings.EqualFold(w, word) {
			return true
		}
	}
	return false
}
