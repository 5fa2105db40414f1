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

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/cleantext"
)

// Causes of this family: an object a Teardown policy selects on which the
// API server refuses the controller's writes, as the policy's
// status.refusedObjects says (docs/api.md, Refused objects).
const (
	// CauseNotGuarded: the policy selects the object but its finalizer and
	// attached record were refused (AttachRefused): the object is not
	// guarded, and its deletion does not wait for the policy's cleanup.
	CauseNotGuarded = "NotGuarded"
	// CauseProgressNotRecorded: the object is held by the policy's key, and
	// the record of its teardown's progress is refused (ProgressRefused):
	// nothing on the object says what its cleanup waits on.
	CauseProgressNotRecorded = "ProgressNotRecorded"
)

// refusedFindings are what the policies' status.refusedObjects say of t:
// never "nothing is blocked" on an object a policy selects but could not
// guard. The policies come from the run's one list of each policy kind.
func (e *Explainer) refusedFindings(ctx context.Context, t Target) []Finding {
	var out []Finding
	for _, p := range Policies(ctx, e.c) {
		for _, r := range p.Refused {
			if groupOf(r.Object.APIVersion) != t.GVK.Group || r.Object.Kind != t.GVK.Kind || r.Object.Namespace != t.Namespace || r.Object.Name != t.Name {
				continue
			}
			out = append(out, refusedFinding(p, r, t.Ref(), e.now))
		}
	}
	return out
}

func refusedFinding(p Policy, r RefusedObject, ref ObjectRef, now time.Time) Finding {
	since := cleantext.Clean(r.Since, 40)
	if at, err := time.Parse(time.RFC3339, r.Since); err == nil {
		since = fmt.Sprintf("%s (%s ago)", at.UTC().Format(time.RFC3339), Age(now.Sub(at)))
	}
	answer := cleantext.Clean(r.Message, 200)
	steps := "its steps"
	if len(p.Steps) > 0 {
		steps = "steps " + strings.Join(p.Steps, ", ")
	}
	room := "make room on the object (the API server's answer says which write is too large: most often its annotations, under 256 KiB in all); the controller tries again every minute"
	f := Finding{Severity: SeverityWarning, Object: &ref, Finalizer: p.Finalizer, FixOwner: "whoever writes the object's annotations (or the policy's author)"}
	switch r.Reason {
	case teardownv1alpha1.ProgressRefusedReason:
		f.Cause = CauseProgressNotRecorded
		f.Message = fmt.Sprintf("%s %s holds it with %q and runs %s, but the API server refuses the record of its progress since %s: %s; what its cleanup waits on is not on the object, and the policy's status.blockedObjects cannot list it",
			p.Ref.Kind, policyName(p.Ref), p.Finalizer, steps, since, answer)
		f.Remedy = room + ", then the progress shows on the object"
	default:
		f.Cause = CauseNotGuarded
		f.Message = fmt.Sprintf("%s %s selects it but never guarded it: the API server refused its finalizer %q and attached record (%s) since %s: %s; a deletion does not wait for %s",
			p.Ref.Kind, policyName(p.Ref), p.Finalizer, cleantext.Clean(r.Reason, 64), since, answer, steps)
		f.Remedy = room + ", and it guards the object within a minute; until then, do not delete it if its cleanup matters"
		f.Leaks = "what " + steps + " would clean up, if it is deleted before it is guarded"
	}
	return f
}

func policyName(r ObjectRef) string {
	if r.Namespace != "" {
		return r.Namespace + "/" + r.Name
	}
	return r.Name
}
