/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package uninstall is `teardown-controller uninstall`: the safe first half
// of removing Teardown from a cluster. It deletes every ClusterTeardownPolicy
// and TeardownPolicy, then waits until they are gone. Each deleted policy
// releases the objects it guards, once the teardowns it started have
// finished (docs/controller.md, "The contract" and "Uninstalling"), which
// needs the controller running; only then may the controller and the CRDs
// go.
package uninstall

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/kubeconfig"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// DocLink is where the timeout message sends the reader.
const DocLink = "docs/controller.md#uninstalling"

// Exit codes of Main.
const (
	ExitOK     = 0
	ExitFailed = 1 // timed out, or the API failed
	ExitUsage  = 2
)

// DefaultTimeout is --timeout's default.
const DefaultTimeout = 5 * time.Minute

// Options tune Run.
type Options struct {
	// Timeout bounds the wait for the policies to go.
	Timeout time.Duration
	// Interval is how often the policies are listed again (1s if zero).
	Interval time.Duration
	// ReportEvery is how often progress is printed while nothing changes
	// (10s if zero); a change in how many are left is printed at once.
	ReportEvery time.Duration
	// Out receives the progress lines.
	Out io.Writer
}

// TimeoutError is Run's error when policies are still there at the
// deadline.
type TimeoutError struct {
	Timeout time.Duration
	// Left names the policies left, as Kind/name or Kind namespace/name.
	Left []string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%d polic%s still there after %s: %s. Is the teardown-controller running? "+
		"Each deleted policy waits for the teardowns it started (kubectl get teardownpolicies,clusterteardownpolicies -A "+
		"shows TERMINATING and BLOCKED); nothing else was removed. See %s for how to let them finish, or release them on purpose",
		len(e.Left), plural(len(e.Left), "y", "ies"), e.Timeout, strings.Join(e.Left, ", "), DocLink)
}

// Main runs the subcommand with args (after "uninstall") and returns the
// process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("teardown-controller uninstall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: teardown-controller uninstall [--kubeconfig PATH] [--timeout 5m]

Deletes every ClusterTeardownPolicy and TeardownPolicy (all namespaces), then
waits until they are gone: each releases the objects it guards once the
teardowns it started have finished, which needs the teardown-controller
running. Remove the controller and the CRDs only after this succeeded.

Exit codes: 0 every policy is gone (or the CRDs are not installed); 1 timed
out (the policies left are named) or the API failed; 2 usage error.
See %s.

Flags:
`, DocLink)
		fs.PrintDefaults()
	}
	config.RegisterFlags(fs)
	timeout := fs.Duration("timeout", DefaultTimeout, "How long to wait for the policies to release what they guard.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "teardown-controller uninstall: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return ExitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "teardown-controller uninstall: --timeout must be positive")
		return ExitUsage
	}
	// controller-runtime's --kubeconfig flag (config.RegisterFlags) names the
	// file first, as config.GetConfig reads it.
	explicit := ""
	if f := fs.Lookup("kubeconfig"); f != nil {
		explicit = f.Value.String()
	}
	if err := kubeconfig.CheckConfigured(kubeconfig.Loader(explicit), "", explicit); err != nil {
		fmt.Fprintln(stderr, "teardown-controller uninstall:", err)
		return ExitFailed
	}
	cfg, err := config.GetConfig()
	if err != nil {
		fmt.Fprintln(stderr, "teardown-controller uninstall:", err)
		return ExitFailed
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := RunConfig(ctx, cfg, Options{Timeout: *timeout, Out: stdout}); err != nil {
		fmt.Fprintln(stderr, "teardown-controller uninstall:", err)
		return ExitFailed
	}
	return ExitOK
}

// RunConfig is Run with a client for cfg.
func RunConfig(ctx context.Context, cfg *rest.Config, opts Options) error {
	scheme := runtime.NewScheme()
	if err := teardownv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to the API server: %w", err)
	}
	return Run(ctx, c, opts)
}

// Run deletes every policy and waits until they are gone, printing progress
// to opts.Out. It returns a *TimeoutError when some are left at
// opts.Timeout. Without the CRDs there is nothing to do.
func Run(ctx context.Context, c client.Client, opts Options) error {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.ReportEvery <= 0 {
		opts.ReportEvery = 10 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	deadline := time.Now().Add(opts.Timeout)
	left, err := list(ctx, c)
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		fmt.Fprintln(opts.Out, "The Teardown CRDs are not installed: nothing to uninstall.")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "Deleting %d polic%s; each releases the objects it guards once the teardowns it started are done (timeout %s).\n",
		len(left), plural(len(left), "y", "ies"), opts.Timeout)
	lastReport, lastCount := time.Time{}, -1
	for {
		// Delete what is not being deleted yet: also any policy created
		// since the last look.
		deleted := false
		for _, p := range left {
			if p.GetDeletionTimestamp() != nil {
				continue
			}
			if err := c.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting %s: %w", name(p), err)
			}
			deleted = true
		}
		if deleted {
			// Report what the deletions left, not what was there before.
			if left, err = list(ctx, c); err != nil {
				return err
			}
		}
		if len(left) == 0 {
			fmt.Fprintln(opts.Out, "Every policy is gone: the controller and the CRDs may be removed now.")
			return nil
		}
		now := time.Now()
		if len(left) != lastCount || now.Sub(lastReport) >= opts.ReportEvery {
			report(opts.Out, left)
			lastReport, lastCount = now, len(left)
		}
		if !now.Before(deadline) {
			names := make([]string, len(left))
			for i, p := range left {
				names[i] = name(p)
			}
			return &TimeoutError{Timeout: opts.Timeout, Left: names}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(opts.Interval, time.Until(deadline))):
		}
		if left, err = list(ctx, c); err != nil {
			return err
		}
	}
}

// list returns every policy, cluster-scoped first, each group by name.
func list(ctx context.Context, c client.Client) ([]teardownv1alpha1.PolicyObject, error) {
	var out []teardownv1alpha1.PolicyObject
	cluster := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := c.List(ctx, cluster); err != nil {
		return nil, fmt.Errorf("listing ClusterTeardownPolicies: %w", err)
	}
	for i := range cluster.Items {
		out = append(out, &cluster.Items[i])
	}
	namespaced := &teardownv1alpha1.TeardownPolicyList{}
	if err := c.List(ctx, namespaced); err != nil {
		return nil, fmt.Errorf("listing TeardownPolicies: %w", err)
	}
	for i := range namespaced.Items {
		out = append(out, &namespaced.Items[i])
	}
	sort.SliceStable(out, func(i, j int) bool { return name(out[i]) < name(out[j]) })
	return out, nil
}

// report prints how many policies are left and, for each, what it waits on.
func report(w io.Writer, left []teardownv1alpha1.PolicyObject) {
	fmt.Fprintf(w, "%d polic%s left:\n", len(left), plural(len(left), "y", "ies"))
	for _, p := range left {
		fmt.Fprintf(w, "  %s: %s\n", name(p), waitingOn(p))
	}
}

// waitingOn says why a policy is still there: the progress record of its
// own finalizer (how many teardowns it waits for), else its Ready condition
// when that is False, else its counts.
func waitingOn(p teardownv1alpha1.PolicyObject) string {
	for _, pr := range finalizer.ReadProgress(p) {
		if pr.Finalizer == teardownv1alpha1.PolicyFinalizer && pr.Message != "" {
			return pr.Message
		}
	}
	status := p.PolicyStatus()
	if c := meta.FindStatusCondition(status.Conditions, teardownv1alpha1.ReadyCondition); c != nil && c.Status != "True" {
		return fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	}
	if p.GetDeletionTimestamp() == nil {
		return "deleting"
	}
	if !hasPolicyFinalizer(p) {
		return "deleted, waiting for its other finalizers: " + strings.Join(p.GetFinalizers(), ", ")
	}
	return fmt.Sprintf("deleted, no release recorded yet (status: guarded %d, terminating %d, blocked %d)",
		status.Guarded, status.Terminating, status.Blocked)
}

func hasPolicyFinalizer(p client.Object) bool {
	for _, f := range p.GetFinalizers() {
		if f == teardownv1alpha1.PolicyFinalizer {
			return true
		}
	}
	return false
}

// name is ClusterTeardownPolicy/NAME or TeardownPolicy NAMESPACE/NAME.
func name(p client.Object) string {
	if p.GetNamespace() == "" {
		return "ClusterTeardownPolicy/" + p.GetName()
	}
	return "TeardownPolicy/" + p.GetName() + " -n " + p.GetNamespace()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
