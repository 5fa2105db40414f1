/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"fmt"
	"io"
	"strings"
)

// Palette colours text; the zero value does not.
type Palette struct{ On bool }

// Wrap colours s with the ANSI code.
func (p Palette) Wrap(code, s string) string {
	if !p.On || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Red is for blockers.
func (p Palette) Red(s string) string { return p.Wrap("31", s) }

// Yellow is for waits and warnings.
func (p Palette) Yellow(s string) string { return p.Wrap("33", s) }

// Green is for progress.
func (p Palette) Green(s string) string { return p.Wrap("32", s) }

// Dim is for labels.
func (p Palette) Dim(s string) string { return p.Wrap("2", s) }

// Bold is for names.
func (p Palette) Bold(s string) string { return p.Wrap("1", s) }

func (p Palette) severity(s string) string {
	switch s {
	case SeverityBlocker:
		return p.Red("✗")
	case SeverityWaiting:
		return p.Yellow("…")
	case SeverityWarning:
		return p.Yellow("!")
	default:
		return p.Dim("·")
	}
}

// RenderReport writes explain's tree.
func RenderReport(w io.Writer, r *Report, p Palette) {
	var b strings.Builder
	head := p.Bold(r.Target.String())
	switch {
	case r.Absent:
		fmt.Fprintf(&b, "%s does not exist", head)
	case r.Unreadable:
		fmt.Fprintf(&b, "%s cannot be read from storage", head)
	case !r.Terminating:
		fmt.Fprintf(&b, "%s is not being deleted", head)
	default:
		fmt.Fprintf(&b, "%s is Terminating for %s", head, r.TerminatingFor)
	}
	if len(r.Finalizers) > 0 {
		fmt.Fprintf(&b, "; finalizers: %s", strings.Join(r.Finalizers, ", "))
	}
	b.WriteString("\n")
	switch {
	case r.Blocked:
		fmt.Fprintf(&b, "%s: %d root blocker(s)\n", p.Red("BLOCKED"), len(r.RootBlockers))
	case r.Verdict == VerdictStalled:
		fmt.Fprintf(&b, "%s: nothing found blocks it, and nothing shows it progressing (no bounded wait, no change in the last %s)\n", p.Red("STALLED"), ShortDuration(ProgressWindow))
		if len(r.Checked) > 0 {
			fmt.Fprintf(&b, "    checked: %s\n", strings.Join(r.Checked, "; "))
		}
		if len(r.NotReadable) > 0 {
			fmt.Fprintf(&b, "    not readable: %s\n", strings.Join(r.NotReadable, "; "))
		}
	case r.Terminating && unverified(r) != nil:
		fmt.Fprintf(&b, "%s: no blocker found yet, but it waits on %s, whose liveness is not known: %s\n", p.Yellow("WAITING"), unverified(r).Component, unverified(r).Evidence)
	case r.Terminating:
		fmt.Fprintf(&b, "%s: nothing is blocked; the deletion is progressing\n", p.Green("PROGRESSING"))
		for _, ev := range r.ProgressEvidence {
			fmt.Fprintf(&b, "    evidence: %s\n", ev)
		}
	}
	b.WriteString("\n")
	for i := range r.Findings {
		RenderFinding(&b, &r.Findings[i], "", "", p)
	}
	if len(r.RootBlockers) > 0 {
		b.WriteString("\n" + p.Bold("Fix first:") + "\n")
		for i, f := range r.RootBlockers {
			obj := ""
			if f.Object != nil {
				obj = " " + f.Object.String()
			}
			fmt.Fprintf(&b, "%2d. %s%s\n", i+1, f.Cause, obj)
			if f.Remedy != "" {
				fmt.Fprintf(&b, "    remedy: %s\n", f.Remedy)
			}
		}
	}
	_, _ = io.WriteString(w, b.String())
}

// unverified is the first control-plane controller the report waits on
// whose Lease does not show it renewing, if any.
func unverified(r *Report) *ControllerLiveness {
	for i := range r.Controllers {
		if r.Controllers[i].State != LivenessRenewing {
			return &r.Controllers[i]
		}
	}
	return nil
}

// RenderFinding writes one finding and its children as a tree, first
// before its own line and rest before the lines below it.
func RenderFinding(b *strings.Builder, f *Finding, first, rest string, p Palette) {
	label := f.Cause
	if f.Catalog != "" {
		label += " [" + f.Catalog + "]"
	}
	subject := ""
	if f.Finalizer != "" {
		subject = " " + f.Finalizer
		if f.Location == "spec" {
			subject = " spec:" + f.Finalizer
		}
		if f.Object != nil && f.Cause != CauseRemovalRejected {
			subject += " on " + f.Object.String()
		}
	} else if f.Object != nil {
		subject = " " + f.Object.String()
	}
	root := ""
	if f.Root {
		root = " " + p.Red("(root)")
	}
	fmt.Fprintf(b, "%s%s %s%s%s\n", first, p.severity(f.Severity), p.Bold(label), subject, root)
	line := func(key, val string) {
		if val != "" {
			fmt.Fprintf(b, "%s    %s %s\n", rest, p.Dim(key+":"), val)
		}
	}
	line("why", f.Message)
	if f.Owner != nil && f.Owner.Component != "" {
		line("owner", fmt.Sprintf("%s (%s, found by %s)", f.Owner.Component, f.Owner.State, f.Owner.Source))
		for _, ev := range f.Owner.Evidence {
			line("evidence", ev)
		}
	}
	if f.Progress != nil {
		line("progress", fmt.Sprintf("%s after %d attempts: %s", f.Progress.State, f.Progress.Attempts, f.Progress.Message))
	}
	line("fix owner", f.FixOwner)
	line("remedy", f.Remedy)
	line("leaks", f.Leaks)
	for i := range f.Children {
		last := i == len(f.Children)-1
		branch, cont := "├─ ", "│  "
		if last {
			branch, cont = "└─ ", "   "
		}
		RenderFinding(b, &f.Children[i], rest+branch, rest+cont, p)
	}
}
