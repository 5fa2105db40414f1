/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// The evidence the checker attaches to a violation, and its figures: what
// a reader needs to tell the controller's mistake from the checker's.

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
		Kills: m.counts["controller-kill"], APIRestarts: m.counts["apiserver-restart"], LeaderElections: m.counts["leader-election"], Pauses: m.counts["pause"],
		ByJustification: c.byJust, ByRule: c.byRule,
		Bursts: m.counts["burst-policies"], Large: m.counts["large-object"], Probes: m.probeTimes}
	for _, e := range c.ledger {
		if e.Outcome == hookHang {
			f.HeldCalls++
		}
	}
	for _, n := range relists {
		f.Relists += n
	}
	return f
}

// owedNotFinished reports a cleanup still owed once everything was healthy
// for owedBound, with the object's history and the ledger.
func (c *checker) owedNotFinished(k owedKey) {
	o := c.h.objs[k.UID]
	states := "never seen by the watch"
	if o != nil {
		states = c.statesString(o, len(o.States)-1)
	}
	var last time.Time
	calls := c.byKey[string(k.UID)+"/"+k.Key]
	if len(calls) > 0 {
		last = calls[len(calls)-1].At
	}
	c.violate("liveness-owed-teardown-not-finished", "%s/%s key %s still there %s after every receiver answered Success (%s); last call %v\n  object: %s\n  ledger: %s\n  policies with this key: %s%s",
		k.NS, k.Name, k.Key, owedBound, k.Why, fmtTime(last, !last.IsZero()), states, c.ledgerString(calls, 8), c.policiesWithKey(k.Key, forever), c.logEvidence(k.Name))
}

// policiesWithKey describes every policy that had key at some time up to t.
func (c *checker) policiesWithKey(key string, t time.Time) string {
	var out []string
	for _, p := range c.h.pols {
		for _, s := range p.States {
			if !s.At.After(t.Add(slack)) && p.key(s.Spec) == key {
				out = append(out, c.policyString(p))
				break
			}
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return "\n    " + strings.Join(out, "\n    ")
}

// logEvidence is what the controllers logged about the object, if the
// harness gave the checker their logs (evidence only: nothing is decided
// from it).
func (c *checker) logEvidence(name string) string {
	if c.facts.Grep == nil {
		return ""
	}
	lines := c.facts.Grep(name)
	if len(lines) == 0 {
		return ""
	}
	return "\n  controller log:\n    " + strings.Join(lines, "\n    ")
}

func fmtTime(t time.Time, ok bool) string {
	if !ok {
		return "never"
	}
	return t.Format(time.StampMilli)
}
