/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package plugin implements kubectl-teardown: one Options{Complete, Validate,
// Run} per subcommand. Queries to the API server, the analysis (graph
// building) and rendering live in separate files; the analysis and rendering
// are pure functions over a snapshot, table-tested without a cluster.
package plugin

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/teardown-dev/teardown/internal/version"
)

// Exit codes of kubectl-teardown.
const (
	// ExitOK: the command did what was asked (explain: nothing is blocked).
	ExitOK = 0
	// ExitError: the command failed (API error, refused release, failed apply).
	ExitError = 1
	// ExitUsage: bad arguments or flags.
	ExitUsage = 2
	// ExitBlocked: explain found at least one blocker, or status
	// --stuck-after found an object Terminating for longer than that.
	// Scripts can tell "stuck" from "failed".
	ExitBlocked = 3
)

// Flag names shared by several commands.
const (
	flagOutput        = "output"
	flagAllNamespaces = "all-namespaces"
	flagExitBlocked   = "exit-blocked"
	flagSelector      = "selector"
	flagColor         = "color"
	flagVersion       = "version"
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// usageArgs makes an argument check's error a usage error (exit code 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
		return nil
	}
}

// errBlocked makes the command exit with ExitBlocked without printing an error.
var errBlocked = &exitError{code: ExitBlocked}

// NewRootCommand builds `kubectl teardown` and its subcommands.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCommand(genericclioptions.NewConfigFlags(true), streams)
}

// newRootCommand builds the command tree on flags; tests wrap the REST
// config through flags.WrapConfigFn.
func newRootCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-teardown",
		Short: "Explain, preview and safely unblock Kubernetes deletion",
		Long: `kubectl teardown explains why an object or a namespace is stuck in Terminating,
previews what a deletion would do, shows teardown progress, and removes a
finalizer safely (dry-run first, evidence shown, audited).

Exit codes: 0 ok, 1 error (including an unreachable cluster), 2 usage, 3 blocked
(explain found a blocker; status --stuck-after found an object Terminating for
longer than that).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl teardown"},
		Version:       version.Get().String(),
	}
	// --version without a shorthand: -v is klog's verbosity.
	root.Flags().Bool(flagVersion, false, "print the version and exit")
	root.SetVersionTemplate("kubectl-teardown {{.Version}}\n")
	flags.AddFlags(root.PersistentFlags())
	registerFlagCompletions(root, flags)
	root.PersistentFlags().String(flagColor, "auto", "colour the output: auto (only on a terminal), always, never")
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: err}
	})
	root.AddCommand(
		NewExplainCommand(flags, streams),
		NewStatusCommand(flags, streams),
		NewPlanCommand(flags, streams),
		NewReleaseCommand(flags, streams),
		NewCheckCommand(flags, streams),
		NewVersionCommand(streams),
	)
	return root
}

// Execute runs the root command with args and returns the exit code.
func Execute(streams genericiooptions.IOStreams, args []string) int {
	// klog flags are hidden except -v, as kubectl plugins do.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	root := NewRootCommand(streams)
	fs.VisitAll(func(f *flag.Flag) {
		pf := pflag.PFlagFromGoFlag(f)
		if f.Name != "v" {
			pf.Hidden = true
		}
		root.PersistentFlags().AddFlag(pf)
	})
	root.SetArgs(args)
	return exitCode(root.Execute(), streams)
}

// exitCode prints err and maps it to an exit code.
func exitCode(err error, streams genericiooptions.IOStreams) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(streams.ErrOut, "error: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
	if isUsageError(err) {
		return ExitUsage
	}
	return ExitError
}

// isUsageError recognises the errors cobra returns before a command runs:
// unknown commands and flags, and required flags not set. Argument checks
// are wrapped by usageArgs instead.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "unknown flag", "unknown shorthand", "required flag(s) "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
