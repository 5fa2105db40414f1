/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/cleantext"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

var (
	// refusedRE is the API server's refusal of a create, as a controller
	// repeats it in a Warning Event: `jobs.batch "x" is forbidden: ...`.
	refusedRE = regexp.MustCompile(`(jobs(?:\.batch)?|pods|cronjobs(?:\.batch)?) "([^"]+)" is forbidden: (.*)`)
	// terminatingNSRE is NamespaceLifecycle's refusal.
	terminatingNSRE = regexp.MustCompile(`unable to create new content in namespace (\S+) because it is being terminated`)
	// quotaRE is the ResourceQuota admission's refusal.
	quotaRE = regexp.MustCompile(`exceeded quota: ([^,\s]+)`)
	// webhookRE is an admission webhook's refusal.
	webhookRE = regexp.MustCompile(`admission webhook "([^"]+)" denied the request`)
)

var gvrResourceQuotas = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}

// refusedCreations: Warning Events about obj saying that a Job (or pod) its
// owner tried to create for the cleanup was refused by the API server. The
// owner runs, and says so, but the refusal does not go away by waiting: a
// namespace being deleted never accepts new content, a full quota stays
// full. Each refusal is a blocker naming what refuses, with the evidence.
func (e *Explainer) refusedCreations(ctx context.Context, s subject, o *Owner) []Finding {
	obj := s.Obj
	seen := map[string]bool{}
	var out []Finding
	// What the owner wrote in the object's status (a namespace being
	// deleted refuses its Events too, but not a status update).
	for _, st := range e.statusTexts(ctx, s) {
		m := refusedRE.FindStringSubmatch(st.Text)
		if m == nil || seen[m[2]] {
			continue
		}
		seen[m[2]] = true
		out = append(out, e.refusal(ctx, obj, o, kindOfRefused(m[1]), m[2], m[3], st.String()+ago(e.now, st.At)))
	}
	events, err := e.c.WarningEvents(ctx, obj.GetNamespace())
	if err != nil {
		return out
	}
	// Newest first: the latest refusal of each Job.
	var about []corev1.Event
	for _, ev := range events {
		if ev.InvolvedObject.UID == obj.GetUID() && !controlPlaneComponents[ev.Source.Component] {
			about = append(about, ev)
		}
	}
	sort.SliceStable(about, func(i, j int) bool { return eventTime(&about[i]).After(eventTime(&about[j])) })
	for i := range about {
		ev := &about[i]
		m := refusedRE.FindStringSubmatch(ev.Message)
		if m == nil || seen[m[2]] {
			continue
		}
		seen[m[2]] = true
		from := ev.Source.Component
		if from == "" {
			from = ev.ReportingController
		}
		said := fmt.Sprintf("event %s (%s%s): %s", cleantext.Clean(ev.Reason, 64), cleantext.Clean(from, 64), countOf(ev), cleantext.Clean(ev.Message, maxSaid))
		out = append(out, e.refusal(ctx, obj, o, kindOfRefused(m[1]), m[2], m[3], said+ago(e.now, eventTime(ev))))
	}
	return out
}

// kindOfRefused is the kind of a refused resource, as the error names it.
func kindOfRefused(resource string) string {
	switch {
	case strings.HasPrefix(resource, "pods"):
		return "Pod"
	case strings.HasPrefix(resource, "cronjobs"):
		return "CronJob"
	}
	return "Job"
}

// statusTexts are what the owner wrote in the object's status: its
// conditions' messages, and a top-level reason or message (KubeRay's
// status.reason).
func (e *Explainer) statusTexts(ctx context.Context, s subject) []statement {
	u := e.fullObject(ctx, s)
	if u == nil {
		return nil
	}
	var out []statement
	for _, k := range []string{"reason", "message", "error"} {
		if v, ok, _ := unstructured.NestedString(u.Object, "status", k); ok && v != "" {
			out = append(out, statement{What: "status." + k, Text: cleantext.Clean(v, maxSaid)})
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		c, _ := raw.(map[string]any)
		typ, _ := c["type"].(string)
		msg, _ := c["message"].(string)
		at, _ := time.Parse(time.RFC3339, fmt.Sprint(c["lastTransitionTime"]))
		if msg != "" {
			out = append(out, statement{What: "condition " + cleantext.Clean(typ, 64), Text: cleantext.Clean(msg, maxSaid), At: at})
		}
	}
	return out
}

func countOf(ev *corev1.Event) string {
	if ev.Count > 1 {
		return fmt.Sprintf(", ×%d", ev.Count)
	}
	return ""
}

// refusal explains one refused creation: what refused it, and what would
// change that.
func (e *Explainer) refusal(ctx context.Context, obj metav1.Object, o *Owner, kind, name, why, said string) Finding {
	component := orUnknown(o.Component)
	fd := Finding{Cause: CauseCleanupJobRefused, Catalog: "B2", Severity: SeverityBlocker,
		Object: &ObjectRef{APIVersion: "batch/v1", Kind: kind, Resource: strings.ToLower(kind) + "s", Namespace: obj.GetNamespace(), Name: name}}
	if kind == "Pod" {
		fd.Object.APIVersion = "v1"
	}
	switch {
	case terminatingNSRE.MatchString(why):
		ns := terminatingNSRE.FindStringSubmatch(why)[1]
		fd.Object = &ObjectRef{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: ns}
		fd.Message = fmt.Sprintf("%s tried to create %s %s for its cleanup, and the API server refused it: namespace %s is being deleted, and no new object may be created in it (NamespaceLifecycle). The %s will never run, so %s cannot finish, and the namespace waits on this object: a deadlock that waiting does not end. %s",
			component, kind, name, ns, kind, component, said)
		fd.FixOwner = "operator vendor (a cleanup that needs a new Job in a namespace being deleted); whoever deletes the namespace"
		fd.Remedy = fmt.Sprintf("do by hand what %s %s would have done (the external cleanup %s runs it for), record it, then remove the finalizer from this object; next time, delete the object and wait for it before deleting its namespace", kind, name, component)
		fd.Leaks = "what the " + kind + " would have cleaned up, unless it is done by hand first"
	case quotaRE.MatchString(why):
		q := quotaRE.FindStringSubmatch(why)[1]
		fd.Object = &ObjectRef{APIVersion: "v1", Kind: "ResourceQuota", Resource: "resourcequotas", Namespace: obj.GetNamespace(), Name: q}
		fd.Message = fmt.Sprintf("%s tried to create %s %s for its cleanup, and ResourceQuota %s refused it: %s. %s", component, kind, name, joinNS(obj.GetNamespace(), q), e.quotaUse(ctx, obj.GetNamespace(), q), said)
		fd.FixOwner = "namespace owner (its quota)"
		fd.Remedy = fmt.Sprintf("free room in ResourceQuota %s (delete finished Jobs or pods counted against it) or raise it; %s then creates the %s and finishes", joinNS(obj.GetNamespace(), q), component, kind)
		fd.Leaks = "nothing yet: the cleanup has not run"
	case webhookRE.MatchString(why):
		hook := webhookRE.FindStringSubmatch(why)[1]
		fd.Message = fmt.Sprintf("%s tried to create %s %s for its cleanup, and admission webhook %q denied it. %s", component, kind, name, hook, said)
		fd.FixOwner = "webhook or policy owner; platform team"
		fd.Remedy = fmt.Sprintf("exempt %s's %s from webhook %q, or fix the policy; %s then finishes", component, kind, hook, component)
		fd.Leaks = "nothing yet: the cleanup has not run"
	default:
		fd.Message = fmt.Sprintf("%s tried to create %s %s for its cleanup, and the API server refused it: %s. %s", component, kind, name, cleantext.Clean(why, maxSaid), said)
		fd.FixOwner = "whoever controls what refused it"
		fd.Remedy = "fix what the refusal names; " + component + " then creates the " + kind + " and finishes"
		fd.Leaks = "nothing yet: the cleanup has not run"
	}
	return fd
}

// quotaUse says what a ResourceQuota allows and uses, read through the
// Cluster (one GET, or one list of the namespace in a Bulk run).
func (e *Explainer) quotaUse(ctx context.Context, ns, name string) string {
	q, err := kube.Typed[corev1.ResourceQuota](ctx, e.c, gvrResourceQuotas, ns, name)
	if err != nil {
		return "it could not be read: " + err.Error()
	}
	var full, parts []string
	for res, hard := range q.Status.Hard {
		used := q.Status.Used[res]
		parts = append(parts, fmt.Sprintf("%s %s of %s", res, used.String(), hard.String()))
		if used.Cmp(hard) >= 0 {
			full = append(full, string(res))
		}
	}
	sort.Strings(parts)
	sort.Strings(full)
	if len(full) > 0 {
		return fmt.Sprintf("it is full for %s (used: %s)", strings.Join(full, ", "), strings.Join(parts, ", "))
	}
	return "used: " + strings.Join(parts, ", ")
}
