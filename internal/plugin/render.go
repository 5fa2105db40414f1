/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// palette colours text; the zero value does not.
type palette struct{ on bool }

func (p palette) wrap(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
func (p palette) red(s string) string    { return p.wrap("31", s) }
func (p palette) yellow(s string) string { return p.wrap("33", s) }
func (p palette) green(s string) string  { return p.wrap("32", s) }
func (p palette) dim(s string) string    { return p.wrap("2", s) }
func (p palette) bold(s string) string   { return p.wrap("1", s) }

// useColor decides --color: auto colours only a terminal.
func useColor(mode string, w io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		f, ok := w.(*os.File)
		return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == "", nil
	}
	return false, usageErrorf("unknown --color %q: use auto, always or never", mode)
}

func (p palette) severity(s string) string {
	switch s {
	case SeverityBlocker:
		return p.red("✗")
	case SeverityWaiting:
		return p.yellow("…")
	case SeverityWarning:
		return p.yellow("!")
	default:
		return p.dim("·")
	}
}

// renderReport writes explain's tree.
func renderReport(w io.Writer, r *Report, p palette) {
	var b strings.Builder
	head := p.bold(r.Target.String())
	switch {
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
		fmt.Fprintf(&b, "%s: %d root blocker(s)\n", p.red("BLOCKED"), len(r.RootBlockers))
	case r.Terminating && unverified(r) != nil:
		fmt.Fprintf(&b, "%s: no blocker found yet, but it waits on %s, whose liveness is not known: %s\n", p.yellow("WAITING"), unverified(r).Component, unverified(r).Evidence)
	case r.Terminating:
		fmt.Fprintf(&b, "%s: nothing is blocked; the deletion is progressing\n", p.green("PROGRESSING"))
	}
	b.WriteString("\n")
	for i := range r.Findings {
		renderFinding(&b, &r.Findings[i], "", "", p)
	}
	if len(r.RootBlockers) > 0 {
		b.WriteString("\n" + p.bold("Fix first:") + "\n")
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

func renderFinding(b *strings.Builder, f *Finding, first, rest string, p palette) {
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
		root = " " + p.red("(root)")
	}
	fmt.Fprintf(b, "%s%s %s%s%s\n", first, p.severity(f.Severity), p.bold(label), subject, root)
	line := func(key, val string) {
		if val != "" {
			fmt.Fprintf(b, "%s    %s %s\n", rest, p.dim(key+":"), val)
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
		renderFinding(b, &f.Children[i], rest+branch, rest+cont, p)
	}
}
