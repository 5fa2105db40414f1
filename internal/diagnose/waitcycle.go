/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

// CauseWaitCycle: the cleanups of Teardown policies wait on each other: a
// step of this object's cleanup waits on an object whose own cleanup waits,
// directly or through others, on this object (a delete step waiting for an
// object whose wait step waits for this one to be gone, say). None of them
// can finish, whatever each does; one policy's steps must change.
const CauseWaitCycle = "WaitCycle"

// CycleLink is one cleanup of a wait cycle: the object torn down, and the
// policy and step whose wait holds it.
type CycleLink struct {
	Object StepRef
	Policy string
	Step   string
}

// WaitCycle is the finding of the first link's cleanup, which waits on the
// second link's object (the finding's object), and so on; the last link's
// waits on the first's. One link: the cleanup waits on its own object.
func WaitCycle(links []CycleLink) Finding {
	var b strings.Builder
	first := links[0]
	f := Finding{Cause: CauseWaitCycle, Severity: SeverityBlocker, FixOwner: cycleFixOwner, Remedy: cycleRemedy}
	if len(links) == 1 {
		f.Object = refPtr(first.Object.ref(""))
		fmt.Fprintf(&b, "its cleanup (step %s of %s) waits on itself", first.Step, first.Policy)
	} else {
		f.Object = refPtr(links[1].Object.ref(""))
		fmt.Fprintf(&b, "the cleanup of %s (step %s of %s) waits on it", first.Object.ref("").String(), first.Step, first.Policy)
		for i, l := range links[1:] {
			next := links[(i+2)%len(links)]
			who := ", whose cleanup"
			if i == 0 {
				who = ", and its own cleanup"
			}
			fmt.Fprintf(&b, "%s (step %s of %s) waits on %s", who, l.Step, l.Policy, next.Object.ref("").String())
		}
	}
	b.WriteString(": the cleanups wait on each other and none can finish; change the steps of one of these policies so that they do not")
	f.Message = b.String()
	return f
}

const (
	cycleFixOwner = "the authors of these policies"
	cycleRemedy   = "edit one policy's steps to break the cycle; the edited version restarts its cleanups from its first step"
)

// cycleFindings are what the policies' status.blockedObjects say of t when
// the controller found its cleanup in a wait cycle: the cycle is the root
// cause, under the policy's finalizer, not a stall. The controller wrote
// the message for the policy's readers (a TeardownPolicy's names only its
// namespace); explain repeats it to whoever can read the policy, from the
// run's one list of each policy kind.
func (e *Explainer) cycleFindings(ctx context.Context, t Target, findings []Finding) []Finding {
	var extra []Finding
	for _, p := range Policies(ctx, e.c) {
		for _, c := range p.Cycles {
			if groupOf(c.Object.APIVersion) != t.GVK.Group || c.Object.Kind != t.GVK.Kind || c.Object.Namespace != t.Namespace || c.Object.Name != t.Name {
				continue
			}
			f := Finding{Cause: CauseWaitCycle, Severity: SeverityBlocker, Finalizer: p.Finalizer, FixOwner: cycleFixOwner, Remedy: cycleRemedy,
				Message: fmt.Sprintf("%s %s says its step %s waits in a cycle: %s", p.Ref.Kind, policyName(p.Ref), cleantext.Clean(c.Step, 63), cleantext.Clean(c.Message, 600))}
			if c.Blocker.Name != "" {
				b := c.Blocker
				f.Object = &b
			}
			if at, err := time.Parse(time.RFC3339, c.Since); err == nil {
				f.Message += fmt.Sprintf(" (found %s ago)", Age(e.now.Sub(at)))
			}
			if !underFinalizer(findings, p.Finalizer, f) {
				extra = append(extra, f)
			}
		}
	}
	return extra
}

// underFinalizer puts f under the top finding of its finalizer, when the
// walk has one; false when not.
func underFinalizer(findings []Finding, fin string, f Finding) bool {
	for i := range findings {
		if findings[i].Finalizer == fin && fin != "" {
			findings[i].Children = append(findings[i].Children, f)
			return true
		}
	}
	return false
}
