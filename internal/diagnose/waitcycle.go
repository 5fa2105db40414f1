/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"fmt"
	"strings"
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
	f := Finding{Cause: CauseWaitCycle, Severity: SeverityBlocker, FixOwner: "the authors of these policies",
		Remedy: "edit one policy's steps to break the cycle; the edited version restarts its cleanups from its first step"}
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
