/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// unguardedBound is how long an object a policy in force selects may go
// without its key, and without a word, before the checker calls it silent:
// a replica paused past its lease (20 s) and a restart, under load, fit in
// it.
const unguardedBound = time.Minute

// checkUnguarded: an object whose annotations leave no room for Teardown's
// records (the generator's filler) cannot be guarded. When a Ready policy
// that attaches automatically selected it for unguardedBound while it was
// live and it never carried that key, the controller must have said so on
// the object: a Warning Event AttachRefused (docs/api.md,
// status.refusedObjects), never silence.
func (c *checker) checkUnguarded(o *objHist) {
	large := false
	for _, s := range o.States {
		if !s.Gone && s.CM.Annotations[fillerKey] != "" {
			large = true
		}
	}
	if !large || len(o.States) == 0 {
		return
	}
	end := o.States[len(o.States)-1].At
	if dt := o.deletionStart(); !dt.IsZero() {
		end = dt
	}
	said := slices.ContainsFunc(c.h.evts, func(r record) bool {
		e := r.Obj.(*corev1.Event)
		return e.Reason == teardownv1alpha1.AttachRefusedReason && (e.InvolvedObject.UID == o.UID || e.InvolvedObject.Namespace == o.NS && e.InvolvedObject.Name == o.Name)
	})
	for _, p := range c.h.pols {
		keys := map[string]bool{}
		for _, s := range p.States {
			if !s.Gone && s.Spec.Attach != teardownv1alpha1.AttachDeclared {
				keys[p.key(s.Spec)] = true
			}
		}
		for key := range keys {
			at, ok := c.h.firstSelected(p, o, key)
			if !ok || at.Add(unguardedBound).After(end) || !p.readyBy(at) {
				continue
			}
			if del, gone := p.deletedAt(); gone && del.Before(at.Add(unguardedBound)) {
				continue
			}
			if slices.ContainsFunc(o.States, func(s objState) bool { return !s.Gone && slices.Contains(s.CM.Finalizers, key) }) {
				continue
			}
			if said {
				c.byJust["objects too large to guard, said (AttachRefused)"]++
				return
			}
			c.violate("unguarded-without-a-word", "%s/%s (uid %s), too large for Teardown's records, was selected by %s under %s from %s until %s, never carried the key, and no AttachRefused Event names it%s",
				o.NS, o.Name, o.UID, p.ID, key, at.Format(time.StampMilli), end.Format(time.StampMilli), c.logEvidence(o.Name))
			return
		}
	}
}
