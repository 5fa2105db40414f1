/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// The run's namespaced objects have names no message would contain by
// chance: cm-<run>-<n> (ConfigMaps) and tp-<run>-<n> (TeardownPolicies).
var modelNameRE = regexp.MustCompile(`\b(cm|tp)-r[0-9]+-[0-9]+\b`)

// checkMessages: what a tenant of namespace N reads (Events in N, progress
// annotations on N's objects, the status of N's TeardownPolicies) names no
// object of another namespace, nor another of the run's namespaces.
func (c *checker) checkMessages() {
	owner := map[string]string{}
	for _, o := range c.h.objs {
		owner[o.Name] = o.NS
	}
	for _, p := range c.h.pols {
		if p.Kind == "TeardownPolicy" {
			owner[p.Name] = p.NS
		}
	}
	reported := map[string]bool{}
	check := func(ns, where, text string) {
		var named []string
		for _, tok := range modelNameRE.FindAllString(text, -1) {
			if on, ok := owner[tok]; ok && on != ns {
				named = append(named, tok+" (of "+on+")")
			}
		}
		for _, other := range c.facts.Namespaces {
			if other != ns && regexp.MustCompile(`\b`+regexp.QuoteMeta(other)+`\b`).MatchString(text) {
				named = append(named, "namespace "+other)
			}
		}
		if len(named) == 0 || reported[where+"\x00"+text] {
			return
		}
		reported[where+"\x00"+text] = true
		c.violate("message-names-another-namespace", "%s in %s names %s: %q", where, ns, strings.Join(named, ", "), text)
	}
	for _, r := range c.h.evts {
		e := r.Obj.(*corev1.Event)
		where := fmt.Sprintf("Event %s on %s %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name)
		if e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != e.Namespace {
			c.violate("message-names-another-namespace", "%s in %s is about an object of %s", where, e.Namespace, e.InvolvedObject.Namespace)
		}
		check(e.Namespace, where, e.Message)
	}
	for _, o := range c.h.objs {
		for _, s := range o.States {
			for k, v := range s.CM.Annotations {
				if strings.HasPrefix(k, "progress.finalizer.teardown.dev/") && !c.facts.TenantWrites[s.CM.ResourceVersion] {
					check(o.NS, "annotation "+k+" on "+o.Name, v)
				}
			}
		}
	}
	for _, p := range c.h.pols {
		if p.Kind != "TeardownPolicy" {
			continue
		}
		for _, s := range p.States {
			where := "status of TeardownPolicy " + p.Name
			for _, cond := range s.Status.Conditions {
				check(p.NS, where+" condition "+cond.Type, cond.Message)
			}
			for _, b := range s.Status.BlockedObjects {
				checkRef(c, p.NS, where+" blockedObjects", b.Object)
				check(p.NS, where+" blockedObjects", b.Message)
				if b.Diagnosis != nil {
					check(p.NS, where+" diagnosis", b.Diagnosis.Message)
				}
			}
			for _, f := range s.Status.RecentFailures {
				checkRef(c, p.NS, where+" recentFailures", f.Object)
				check(p.NS, where+" recentFailures", f.Message)
			}
		}
	}
}

func checkRef(c *checker, ns, where string, ref teardownv1alpha1.ObjectReference) {
	if ref.Namespace != "" && ref.Namespace != ns {
		c.violate("message-names-another-namespace", "%s in %s names %s %s/%s", where, ns, ref.Kind, ref.Namespace, ref.Name)
	}
}

// Evidence, for violation messages.

func (c *checker) ledgerString(calls []ledgerEntry, n int) string {
	if len(calls) == 0 {
		return "no calls"
	}
	var out []string
	if len(calls) > n {
		out = append(out, fmt.Sprintf("(%d calls, the last %d)", len(calls), n))
		calls = calls[len(calls)-n:]
	}
	for _, e := range calls {
		out = append(out, fmt.Sprintf("#%d %s %s step %s key %s → %s", e.Seq, e.At.Format(time.StampMilli), e.Path, e.Step, e.Finalizer, e.answered()))
	}
	return strings.Join(out, "\n    ")
}

func (c *checker) policyString(p *polHist) string {
	var out []string
	for _, s := range p.States {
		st := ""
		switch {
		case s.Gone:
			st = " GONE"
		case s.Deleting:
			st = " deleting"
		}
		ready := ""
		if c := meta.FindStatusCondition(s.Status.Conditions, teardownv1alpha1.ReadyCondition); c != nil && !s.Ready {
			ready = fmt.Sprintf(" (%s gen %d: %.160s)", c.Reason, c.ObservedGeneration, c.Message)
		}
		out = append(out, fmt.Sprintf("%s gen %d ready=%v%s%s key=%s %s finalizer=%s retired=%v", s.At.Format(time.StampMilli), s.Gen, s.Ready, ready, st,
			p.key(s.Spec), specString(s.Spec), s.Status.Finalizer, s.Status.Retired))
	}
	return p.ID + ":\n    " + strings.Join(dedupe(out), "\n    ")
}

func (c *checker) statesString(o *objHist, upTo int) string {
	var out []string
	for _, s := range o.States[:upTo+1] {
		who := "controller"
		if c.facts.TenantWrites[s.CM.ResourceVersion] {
			who = "tenant"
		}
		gap := ""
		if s.Gap {
			gap = " (after a watch gap)"
		}
		del := ""
		if s.CM.DeletionTimestamp != nil {
			del = " deleting since " + s.CM.DeletionTimestamp.Format(time.TimeOnly)
		}
		if s.Gone {
			del = " GONE"
		}
		out = append(out, fmt.Sprintf("%s rv %s by %s%s labels=%v finalizers=%v%s", s.At.Format(time.StampMilli), s.CM.ResourceVersion, who, gap, s.CM.Labels, s.CM.Finalizers, del))
	}
	return "\n    " + strings.Join(out, "\n    ") + "\n  " + c.recordsString(o, upTo-1)
}

// recordsString shows the annotations of the object's state i (its last
// if i < 0).
func (c *checker) recordsString(o *objHist, i int) string {
	if i < 0 || i >= len(o.States) {
		i = len(o.States) - 1
	}
	last := o.States[i].CM
	var out []string
	for _, k := range keysOf(last.Annotations) {
		out = append(out, k+"="+last.Annotations[k])
	}
	return "annotations: " + strings.Join(out, " ")
}

func stepsString(steps []teardownv1alpha1.Step) string {
	var out []string
	for _, s := range steps {
		d := s.Name + ":" + string(s.OnFailure)
		if s.Timeout != nil {
			d += "/" + s.Timeout.Duration.String()
		}
		out = append(out, d)
	}
	return strings.Join(out, ",")
}

func dedupe(lines []string) []string {
	var out []string
	for i, l := range lines {
		// Drop the timestamp when comparing with the line before.
		if i > 0 && l[strings.IndexByte(l, ' '):] == lines[i-1][strings.IndexByte(lines[i-1], ' '):] {
			continue
		}
		out = append(out, l)
	}
	return out
}

// figures sums up what the run did and what the checker found.
func (c *checker) figures(steps int, m *modelRun, relists map[string]int) modelFigures {
	f := modelFigures{Seeds: 1, Steps: steps, Removals: c.removals, Calls: len(c.ledger),
		Kills: m.counts["controller-kill"], APIRestarts: m.counts["apiserver-restart"], LeaderElections: m.counts["leader-election"],
		ByJustification: c.byJust, ByRule: c.byRule}
	for _, n := range relists {
		f.Relists += n
	}
	return f
}
