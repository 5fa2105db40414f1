/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// The checker reads only the recorded watch events, the receivers' ledger
// and which ConfigMap writes were a tenant's (modelFacts). It does not
// import the controller: what justifies a removal is the contract
// (docs/controller.md, "The contract"), restated here from the outside.

// slack absorbs the distance between when something happened and when our
// watch delivered it (the controller's watch may be ahead of ours).
const slack = 2 * time.Second

type modelFacts struct {
	Namespaces   []string
	TenantWrites map[string]bool // resourceVersions of ConfigMap writes by the generator
	// PolicyWrites are the generator's policy writes, by "<policy
	// UID>/<generation it made>" (and "<policy UID>/deleted"): when it sent
	// each and the spec it wrote. A generation takes effect no later than
	// its write, however late the recorder's watch delivers it, and under
	// the spec written, whether the watch delivers it at all (after a
	// kube-apiserver restart it relists, seconds later, and sees only the
	// last generation).
	PolicyWrites map[string]polWrite
	// Policies are the IDs of every policy the generator created: one the
	// watches never saw was created and gone within a watch gap (after a
	// kube-apiserver restart), and what it did cannot be judged.
	Policies []string
	// Grep returns controller log lines that mention a name, for evidence.
	Grep func(name string) []string
}

type checker struct {
	facts  modelFacts
	h      *history
	ledger []ledgerEntry
	byKey  map[string][]ledgerEntry // uid/finalizer

	removals   int
	byJust     map[string]int
	byRule     map[string]int
	violations []string
}

func newChecker(f modelFacts, recs []record, ledger []ledgerEntry) *checker {
	inRun := map[string]bool{}
	for _, ns := range f.Namespaces {
		inRun[ns] = true
	}
	c := &checker{facts: f, h: buildHistory(recs, inRun, f.PolicyWrites), ledger: ledger, byKey: map[string][]ledgerEntry{},
		byJust: map[string]int{}, byRule: map[string]int{}}
	for _, e := range ledger {
		k := string(e.UID) + "/" + e.Finalizer
		c.byKey[k] = append(c.byKey[k], e)
	}
	return c
}

func (c *checker) violate(rule, format string, args ...any) {
	c.byRule[rule]++
	c.violations = append(c.violations, rule+": "+fmt.Sprintf(format, args...))
}

func (c *checker) check() {
	c.checkCalls()
	for _, o := range c.h.objs {
		c.checkRemovals(o)
		c.checkRecordOrder(o)
		c.checkUnguarded(o)
	}
	c.checkMessages()
}

// writtenRecord is what the record-order rule reads of a step record
// (steps.teardown.dev/<key>): who wrote it, for which policy version.
type writtenRecord struct {
	Object     types.UID `json:"object"`
	Policy     string    `json:"policy"`
	Generation int64     `json:"generation"`
	Lease      string    `json:"lease"`
	Epoch      int64     `json:"epoch"`
}

// checkRecordOrder: the controller's step records on an object never move
// backwards: under one Lease, no record of an older leadership (epoch)
// follows a newer one's, and under one leadership no record of an older
// generation of a policy follows a newer one's (docs/controller.md, "A
// paused and resumed replica"). Records a tenant wrote are skipped.
func (c *checker) checkRecordOrder(o *objHist) {
	last := map[string]writtenRecord{}
	for _, st := range o.States {
		if st.Gone || st.CM == nil || c.facts.TenantWrites[st.CM.ResourceVersion] {
			continue
		}
		for k, v := range st.CM.Annotations {
			if !strings.HasPrefix(k, "steps.teardown.dev/") {
				continue
			}
			var rec writtenRecord
			if json.Unmarshal([]byte(v), &rec) != nil || rec.Object != o.UID {
				continue
			}
			prev, ok := last[k]
			last[k] = rec
			if !ok || prev == rec || prev.Lease == "" || prev.Lease != rec.Lease {
				continue
			}
			if rec.Epoch < prev.Epoch || rec.Epoch == prev.Epoch && rec.Policy == prev.Policy && rec.Generation < prev.Generation {
				c.violate("record-moved-backwards", "object %s/%s (uid %s) %s: %+v after %+v", o.NS, o.Name, o.UID, k, rec, prev)
			}
		}
	}
}

// checkCalls: every call is for an object being deleted that its policy
// selected under that key at some time, and one teardown is one policy's.
func (c *checker) checkCalls() {
	seen := map[string]bool{}
	for k, calls := range c.byKey {
		var pols []string
		for _, e := range calls {
			if !slices.Contains(pols, e.Path) {
				pols = append(pols, e.Path)
			}
		}
		if len(pols) > 1 {
			c.violate("teardown-run-by-two-policies", "object %s/%s (uid %s) key %s: calls from %v\n%s",
				calls[0].Namespace, calls[0].Name, calls[0].UID, calls[0].Finalizer, pols, c.ledgerString(calls, 12))
		}
		for _, e := range calls {
			if e.Path != e.Policy {
				c.violate("call-with-another-policys-identity", "receiver of %s called as %s for %s/%s", e.Path, e.Policy, e.Namespace, e.Name)
			}
			ck := k + "/" + e.Path
			if seen[ck] {
				continue
			}
			seen[ck] = true
			o, p := c.h.objs[e.UID], c.h.pols[e.Path]
			if p == nil && slices.Contains(c.facts.Policies, e.Path) {
				c.byJust["calls not judged: the policy was created and gone within a watch gap"]++
				continue
			}
			if o == nil || p == nil {
				c.violate("call-on-unknown-object", "call #%d from %s for %s/%s uid %s, which the watches never saw", e.Seq, e.Path, e.Namespace, e.Name, e.UID)
				continue
			}
			if dt := o.deletionStart(); dt.IsZero() || e.At.Add(100*time.Millisecond).Before(dt) {
				c.violate("cleanup-of-a-live-object", "call #%d at %s from %s for %s/%s, deletionTimestamp %v", e.Seq, e.At.Format(time.StampMilli), e.Path, o.NS, o.Name, dt)
			}
			if at, ok := c.h.firstSelected(p, o, e.Finalizer); !ok || at.After(e.At.Add(slack)) {
				upTo := 0
				for i, s := range o.States {
					if !s.At.After(e.At) {
						upTo = i
					}
				}
				c.violate("call-on-an-object-never-selected", "%s called its receiver (step %s, key %s) at %s for %s/%s, which it never selected under that key before the call (first selected: %v)\n  object: %s\n  policies with this key: %s%s",
					e.Path, e.Step, e.Finalizer, e.At.Format(time.StampMilli), o.NS, o.Name, fmtTime(at, ok), c.statesString(o, upTo), c.policiesWithKey(e.Finalizer, e.At), c.logEvidence(o.Name))
			}
		}
	}
}

// checkRemovals judges every key that left an object's finalizers.
func (c *checker) checkRemovals(o *objHist) {
	for i := 1; i < len(o.States); i++ {
		prev, next := o.States[i-1], o.States[i]
		var removed []string
		for _, k := range prev.CM.Finalizers {
			if next.Gone || !slices.Contains(next.CM.Finalizers, k) {
				removed = append(removed, k)
			}
		}
		for _, k := range removed {
			c.removals++
			if next.Gone && !next.Gap && o.deletionStart().IsZero() {
				// Gone without ever carrying a deletionTimestamp: no one
				// removed the key, kube-apiserver deleted the object past
				// it, because the DELETE read the object before the key was
				// added (kubernetes/kubernetes#77988; docs/controller.md,
				// "Attach at create").
				c.byJust["deleted past the key by kube-apiserver (kubernetes#77988)"]++
				continue
			}
			deleting := prev.CM.DeletionTimestamp != nil || next.Gone
			var just, why string
			superseded := false
			if deleting {
				just, why, superseded = c.judgeTeardown(o, i, k)
			} else {
				just, why = c.judgeLive(o, i, k)
			}
			if just != "" {
				c.byJust[just]++
				continue
			}
			gap := ""
			if next.Gap {
				gap = " (seen across a watch gap: the removal happened between the two states)"
			}
			rule := "unjustified-removal-of-a-live-object"
			switch {
			case superseded:
				rule = "removal-on-a-superseded-version"
			case deleting:
				rule = "unjustified-removal"
			}
			c.violate(rule, "%s removed from %s/%s (uid %s) at %s%s: %s\n  object: %s\n  ledger: %s\n  policies with this key: %s%s",
				k, o.NS, o.Name, o.UID, next.At.Format(time.StampMilli), gap, why, c.statesString(o, i), c.ledgerString(c.callsBefore(o.UID, k, next.At), 10),
				c.policiesWithKey(k, next.At), c.logEvidence(o.Name))
		}
	}
}

func (c *checker) callsBefore(uid types.UID, key string, t time.Time) []ledgerEntry {
	var out []ledgerEntry
	for _, e := range c.byKey[string(uid)+"/"+key] {
		if e.At.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// judgeTeardown: a key leaves an object being deleted only after the steps
// of the policy that started its teardown succeeded (Continue counting as
// done), or a rule of that policy let it go: a definitive failure or a
// step timeout under onFailure Release, its deadline under onDeadline
// Release, its deletion under onPolicyDeletion Release outside a namespace
// being deleted. The steps that ran to the end must be those of a version
// still in force when the key left (within slack): a removal decided on
// the answers of a version superseded meanwhile (an edit of the steps, seen
// by a replica that was paused, or whose cache was behind) is flagged as
// such (superseded), not justified (docs/controller.md, "A paused and
// resumed replica").
func (c *checker) judgeTeardown(o *objHist, i int, key string) (just, why string, superseded bool) {
	t := o.States[i].At
	dt := o.deletionStart()
	if dt.IsZero() { // the deletion happened in a watch gap
		dt = o.States[i-1].At.Truncate(time.Second)
	}
	calls := c.callsBefore(o.UID, key, t)
	var candidates []*polHist
	if len(calls) > 0 {
		if p := c.h.pols[calls[0].Path]; p != nil {
			candidates = append(candidates, p)
		} else if slices.Contains(c.facts.Policies, calls[0].Path) {
			return "not judged: the policy that called its receiver was created and gone within a watch gap", "", false
		}
	} else {
		for _, p := range c.h.pols {
			if at, ok := c.h.firstSelected(p, o, key); ok && !at.After(t.Add(slack)) && p.readyBy(t.Add(slack)) {
				candidates = append(candidates, p)
			}
		}
	}
	if len(candidates) == 0 {
		return "", "no policy ever selected the object under this key, and no receiver was called for it", false
	}
	var notes []string
	for _, p := range candidates {
		mine := calls[:0:0]
		for _, e := range calls {
			if e.Path == p.ID {
				mine = append(mine, e)
			}
		}
		seenSteps := map[string]bool{}
		for _, s := range p.States {
			if s.At.After(t.Add(slack)) {
				break
			}
			fp := stepsString(s.Spec.Steps)
			if !seenSteps[fp] {
				seenSteps[fp] = true
				if j := chain(s.Spec.Steps, mine, dt, t); j != "" {
					if p.stepsInForceAround(fp, t) {
						return j, "", false
					}
					superseded = true
					notes = append(notes, fmt.Sprintf("%s: steps [%s] reached %q, but no version with those steps was in force within %s of the removal", p.ID, fp, j, slack))
				}
			}
			if d := s.Spec.Deadline; d != nil && s.Spec.OnDeadline == teardownv1alpha1.DeadlineRelease && !t.Before(dt.Add(d.Duration-time.Second)) {
				return "deadline Release", "", false
			}
		}
		if del, ok := p.deletedAt(); ok && !del.After(t.Add(slack)) {
			release := false
			for _, s := range p.States {
				if !s.At.After(t) && s.Spec.OnPolicyDeletion == teardownv1alpha1.PolicyDeletionRelease {
					release = true
				}
			}
			if release {
				if ns, _ := c.h.nsAt(o.NS, t.Add(-slack)); ns.Deleting {
					notes = append(notes, fmt.Sprintf("%s was deleted with onPolicyDeletion Release, but namespace %s was being deleted", p.ID, o.NS))
				} else {
					return "onPolicyDeletion Release", "", false
				}
			}
		}
		notes = append(notes, fmt.Sprintf("%s: no complete run of its steps in force, no Release rule met (%s)", p.ID, c.policyString(p)))
	}
	return "", strings.Join(notes, "; "), superseded
}

// stepsInForceAround says whether a version of the policy with these steps
// (stepsString) was in force at some moment within slack of t: its spec, or
// the version its status keeps served (specsInForce). A policy's last state
// before it was gone stays in force (a deleted policy finishes what it
// started under onPolicyDeletion Finish, and our watch may show it gone
// before the removal it made).
func (p *polHist) stepsInForceAround(fp string, t time.Time) bool {
	var live []polState
	for _, s := range p.States {
		if !s.Gone {
			live = append(live, s)
		}
	}
	for i, s := range live {
		if s.At.After(t.Add(slack)) {
			break
		}
		if i+1 < len(live) && !live[i+1].At.After(t.Add(-slack)) {
			continue // replaced before the window
		}
		for _, spec := range specsInForce(s) {
			if stepsString(spec.Steps) == fp {
				return true
			}
		}
	}
	return false
}

// chain says whether the calls show steps run to the end in order after
// start and before t ("cleanup succeeded"), or a step that failed
// definitively (Failure, or its timeout) under onFailure Release.
func chain(steps []teardownv1alpha1.Step, calls []ledgerEntry, start, t time.Time) string {
	cur := start
	for _, s := range steps {
		next := time.Time{}
		for _, e := range calls {
			if e.Step != s.Name || e.At.Before(cur) || e.At.After(t) {
				continue
			}
			switch e.answered() {
			case "Success":
			case "Failure":
				switch s.OnFailure {
				case teardownv1alpha1.FailureRelease:
					return "onFailure Release (Failure)"
				case teardownv1alpha1.FailureContinue:
				default:
					continue
				}
			default:
				continue
			}
			next = e.At
			break
		}
		if s.Timeout != nil {
			end := cur.Add(s.Timeout.Duration - time.Second)
			if !end.After(t) && (next.IsZero() || end.Before(next)) {
				switch s.OnFailure {
				case teardownv1alpha1.FailureRelease:
					return "onFailure Release (timeout)"
				case teardownv1alpha1.FailureContinue:
					next = end
				}
			}
		}
		if next.IsZero() {
			return ""
		}
		cur = next
	}
	return "cleanup succeeded"
}

// judgeLive: a key leaves an object that is not being deleted when the
// policy whose key it is, selecting the object, is being deleted (outside a
// namespace being deleted); otherwise only where Teardown attached it (the
// controller added it, or the object carries an attached record bound to
// its UID), and only when no policy in force with that key selects the
// object any more (it stopped matching, the key was retired, the policy was
// deleted), within a few seconds of the removal; and, for a policy's
// deletion, not in a namespace being deleted.
func (c *checker) judgeLive(o *objHist, i int, key string) (string, string) {
	prev, t := o.States[i-1], o.States[i].At
	if c.releasedByDeletion(o, key, t) {
		return "live release (its policy was deleted)", ""
	}
	record, marked := prev.CM.Annotations["attached.finalizer.teardown.dev/"+annotationName(key)]
	attached := marked && record == string(o.UID)
	if !attached {
		for j := i - 1; j >= 0; j-- {
			s := o.States[j]
			if !slices.Contains(s.CM.Finalizers, key) {
				break
			}
			if j == 0 || !slices.Contains(o.States[j-1].CM.Finalizers, key) {
				attached = !c.facts.TenantWrites[s.CM.ResourceVersion]
			}
		}
	}
	how := "live release (no policy in force selects it under this key)"
	if !attached && marked {
		// docs/controller.md, "Key ownership": an unbound attached record
		// still lets a key be removed from an object not being deleted
		// that the policy does not select; it lets nothing go.
		attached, how = true, "live release (an unbound attached record: a tenant's, documented)"
	}
	if !attached {
		return "", "the key was written by the object's tenant (a manifest's or an UPDATE's), not attached by Teardown"
	}
	for _, at := range c.checkTimes(o, t) {
		os, ok := stateAt(o.States, at, func(s objState) time.Time { return s.At })
		if !ok {
			continue
		}
		ns, _ := c.h.nsAt(o.NS, at)
		held, deletedOnly := false, false
		for _, p := range c.h.pols {
			s, ok := stateAt(p.States, at, func(s polState) time.Time { return s.At })
			if !ok || s.Gone || !s.Ready || p.key(s.Spec) != key || !p.selects(s.Spec, o.NS, os.CM.Labels, ns.Labels) {
				continue
			}
			if s.Deleting {
				// Deleted with its namespace (docs/controller.md: a
				// namespace being deleted takes its policies with it, and
				// nothing in it is released), not deleted on its own before:
				// the live objects of a policy deleted on its own are
				// released whatever befalls their namespace later.
				if del, ok := p.deletedAt(); ok && ns.Deleting && !del.Before(c.h.nsDeletedAt(o.NS).Add(-slack)) {
					deletedOnly = true
				}
				continue
			}
			held = true
		}
		if held {
			continue
		}
		if deletedOnly && ns.Deleting {
			return "", "released because its policy was deleted, in namespace " + o.NS + ", which was being deleted"
		}
		return how, ""
	}
	return "", "a policy in force with this key selected the object throughout the last " + (5 * time.Second).String()
}

// releasedByDeletion: a policy being deleted releases its own key from the
// live objects it selects, a Declared key included (docs/controller.md,
// "When a policy is deleted"), and what it attached under a key of an
// earlier version or one it yielded (the attached record, bound to the
// object, names it: "a yielded policy releases what it attached when it is
// uninstalled"), except in a namespace being deleted.
func (c *checker) releasedByDeletion(o *objHist, key string, t time.Time) bool {
	for _, at := range c.checkTimes(o, t) {
		os, ok := stateAt(o.States, at, func(s objState) time.Time { return s.At })
		ns, _ := c.h.nsAt(o.NS, at)
		if !ok || ns.Deleting {
			continue
		}
		attachedBy := ""
		if v, marked := os.CM.Annotations["attached.finalizer.teardown.dev/"+annotationName(key)]; marked {
			if obj, pol, found := strings.Cut(v, "/"); found && obj == string(o.UID) {
				attachedBy = pol
			}
		}
		for _, p := range c.h.pols {
			s, ok := stateAt(p.States, at, func(s polState) time.Time { return s.At })
			deleting := ok && s.Deleting
			if del, seen := p.deletedAt(); ok && seen && !del.After(at) {
				deleting = true // its deletion reached our watch late, across a gap
			}
			if !deleting {
				continue
			}
			if p.key(s.Spec) == key && p.selects(s.Spec, o.NS, os.CM.Labels, ns.Labels) || attachedBy != "" && attachedBy == string(p.UID) {
				return true
			}
		}
	}
	return false
}

// checkTimes are the moments of the few seconds around t at which anything
// the live rule reads changed, and t itself: the cause may reach our watch
// of policies after the removal reached our watch of objects.
func (c *checker) checkTimes(o *objHist, t time.Time) []time.Time {
	from, to := t.Add(-5*time.Second), t.Add(slack)
	out := []time.Time{t}
	add := func(at time.Time) {
		if at.After(from) && at.Before(to) {
			out = append(out, at)
		}
	}
	for _, s := range o.States {
		add(s.At)
	}
	for _, s := range c.h.nss[o.NS] {
		add(s.At)
	}
	for _, p := range c.h.pols {
		for _, s := range p.States {
			add(s.At)
		}
	}
	return out
}
