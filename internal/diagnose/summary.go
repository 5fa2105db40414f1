/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// NamespaceBlocker summarises a terminating namespace from its conditions.
func NamespaceBlocker(ns *corev1.Namespace, now time.Time) string {
	byType := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	for _, c := range ns.Status.Conditions {
		byType[c.Type] = c
	}
	if c, ok := byType[condDiscoveryFailure]; ok && c.Status == corev1.ConditionTrue {
		return "API discovery failing for " + strings.Join(parseDiscoveryFailure(c.Message), ", ") + " (unavailable APIService)"
	}
	if c, ok := byType[condContentFailure]; ok && c.Status == corev1.ConditionTrue {
		if names := parseWebhookNames(c.Message); len(names) > 0 {
			return "content deletion failing: webhook " + strings.Join(names, ", ")
		}
		return "content deletion failing: " + Shorten(c.Message, 80)
	}
	if c, ok := byType[condFinalizersRemaining]; ok && c.Status == corev1.ConditionTrue {
		fins := parseFinalizersRemaining(c.Message)
		var parts []string
		for f, n := range fins {
			parts = append(parts, fmt.Sprintf("%s (%d)", f, n))
		}
		sort.Strings(parts)
		return "content waits on finalizers " + strings.Join(parts, ", ")
	}
	if c, ok := byType[condContentRemaining]; ok && c.Status == corev1.ConditionTrue {
		var parts []string
		for _, r := range parseContentRemaining(c.Message) {
			parts = append(parts, fmt.Sprintf("%d %s", r.Count, strings.TrimSuffix(r.Resource+"."+r.Group, ".")))
		}
		return "content remaining: " + strings.Join(parts, ", ")
	}
	if len(ns.Finalizers) > 0 {
		return "metadata finalizers on the namespace: " + strings.Join(ns.Finalizers, ", ")
	}
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			return "foreign spec finalizer " + string(f)
		}
	}
	if len(ns.Status.Conditions) == 0 {
		if ns.DeletionTimestamp != nil && now.Sub(ns.DeletionTimestamp.Time) > namespaceControllerGrace {
			return "no condition after " + Age(now.Sub(ns.DeletionTimestamp.Time)) + ": namespace controller not running (run explain)"
		}
		return "no condition yet: namespace controller has not run"
	}
	return "namespace controller finishing"
}

// ControllerManagerFinalizer returns the first of fins that a controller of
// kube-controller-manager removes, and that controller.
func ControllerManagerFinalizer(kind string, fins []string) (fin, component string) {
	for _, f := range fins {
		if e, ok := lookupCatalog(f, kind); ok && e.BuiltIn && strings.HasSuffix(e.Component, "(kube-controller-manager)") {
			return f, strings.TrimSuffix(e.Component, " (kube-controller-manager)")
		}
	}
	return "", ""
}

// ObjectBlocker is status's one-line guess for an object, from metadata
// only; explain gives the full answer.
func ObjectBlocker(kind string, obj metav1.Object, now time.Time) string {
	fins := obj.GetFinalizers()
	if len(fins) == 0 {
		if kind == "Pod" {
			if now.Before(obj.GetDeletionTimestamp().Time) {
				return "in grace period (" + Age(obj.GetDeletionTimestamp().Sub(now)) + " left)"
			}
			return "past grace period: kubelet has not confirmed (node down?)"
		}
		return "no finalizers: being removed"
	}
	progress := map[string]record.Progress{}
	for _, p := range record.ReadProgress(obj) {
		progress[p.Finalizer] = p
	}
	f := fins[0]
	if p, ok := progress[f]; ok {
		s := fmt.Sprintf("%s: %s (attempt %d)", f, p.State, p.Attempts)
		if p.Message != "" {
			s += ": " + Shorten(p.Message, 60)
		}
		if p.DeadlineExceeded {
			s += " [deadline exceeded]"
		}
		return s
	}
	switch f {
	case "foregroundDeletion":
		return "foregroundDeletion: waiting for blocking dependents"
	case "orphan":
		return "orphan: garbage collector orphaning dependents"
	}
	more := ""
	if len(fins) > 1 {
		more = fmt.Sprintf(" (+%d more)", len(fins)-1)
	}
	if e, ok := lookupCatalog(f, kind); ok {
		return fmt.Sprintf("%s: waiting for %s%s", f, e.Component, more)
	}
	if m := finalizerManager(obj, f); m != "" && !isGenericManager(m) {
		return fmt.Sprintf("%s: waiting for %s (added it)%s", f, m, more)
	}
	return fmt.Sprintf("%s: owner unknown (run explain)%s", f, more)
}

// Summary is status's one line for an explained object: its first root
// blocker (with how many more there are); else what it waits on and
// whether that is alive; "" when the report names neither (status then
// keeps its guess from metadata).
func Summary(rep *Report) string {
	if len(rep.RootBlockers) > 0 {
		s := findingLine(rep, &rep.RootBlockers[0])
		if n := len(rep.RootBlockers) - 1; n > 0 {
			s += fmt.Sprintf(" (+%d more)", n)
		}
		return s
	}
	var waiting *Finding
	WalkFindings(rep.Findings, func(f *Finding) {
		if waiting == nil && f.Severity == SeverityWaiting && f.Owner != nil && f.Owner.Component != "" {
			waiting = f
		}
	})
	if waiting == nil {
		if rep.Verdict == VerdictStalled {
			return "stalled: nothing blocks it, nothing shows progress"
		}
		return ""
	}
	s := fmt.Sprintf("waiting for %s (%s: %s)", waiting.Owner.Component, waiting.Owner.State, Shorten(lastEvidence(waiting.Owner), 100))
	if p := waiting.Progress; p != nil && p.Message != "" {
		// The owner's own record of what its cleanup waits on (a Teardown
		// step and what it waits for) says more than its liveness alone.
		s = fmt.Sprintf("%s (%s, attempt %d); %s", Shorten(p.Message, 120), p.State, p.Attempts, s)
	}
	if rep.Verdict == VerdictStalled {
		s = "stalled, " + s
	}
	if waiting.Finalizer != "" {
		s = waiting.Finalizer + ": " + s
	}
	return s
}

// findingLine is "<finalizer>: <cause> [<catalog>] <object>: <message>",
// the object only when it is not the report's target, the message
// shortened; for an owner found stopped or missing, the evidence follows.
func findingLine(rep *Report, f *Finding) string {
	s := f.Cause
	if f.Catalog != "" {
		s += " [" + f.Catalog + "]"
	}
	if f.Finalizer != "" {
		s = f.Finalizer + ": " + s
	}
	if f.Object != nil && !(f.Object.Kind == rep.Target.Kind && f.Object.Namespace == rep.Target.Namespace && f.Object.Name == rep.Target.Name) {
		s += " " + f.Object.String()
	}
	s += ": " + Shorten(f.Message, 140)
	if f.Owner != nil && (f.Owner.State == OwnerDown || f.Owner.State == OwnerMissing) {
		// The evidence, unless the message already gives it.
		if ev := lastEvidence(f.Owner); !strings.Contains(f.Message, ev[:min(len(ev), 40)]) {
			s += "; " + Shorten(ev, 100)
		}
	}
	return s
}
