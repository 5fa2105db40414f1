/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package installcheck

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/teardown-dev/teardown/internal/kubeconfig"
	"github.com/teardown-dev/teardown/internal/version"
)

// Exit codes of Main and of `kubectl teardown check`.
const (
	ExitOK     = 0
	ExitFailed = 1 // a check failed, or the API server could not be reached
	ExitUsage  = 2
)

// Poll is how often RunUntil checks again.
const Poll = 2 * time.Second

// RunUntil runs the checks until none fails or wait has passed, and returns
// the last results. A zero wait checks once. Installing and checking in one
// go (the chart's post-install hook) needs the wait: the controller takes
// some seconds to start and lead.
func RunUntil(ctx context.Context, c Clients, opts Options, wait time.Duration) []Result {
	deadline := time.Now().Add(wait)
	for {
		results := Run(ctx, c, opts)
		if !Failed(results) || !time.Now().Add(Poll).Before(deadline) {
			return results
		}
		select {
		case <-ctx.Done():
			return results
		case <-time.After(Poll):
		}
	}
}

// Main runs `teardown-controller check` with args (after "check") and
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("teardown-controller check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: teardown-controller check [--kubeconfig PATH] [--namespace NS] [--wait 2m]

Checks that Teardown is installed and working: the CRDs established and served,
the admission policies bound, a controller leading with a recent Lease and a
ready Deployment, each enabled admission webhook with a CA bundle and a ready
endpoint, the CRDs and the controller of one release. The chart runs it as its
helm test (and, with check.postInstall=true, after install and upgrade).

Exit codes: 0 every check passed; 1 a check failed (each says why) or the API
failed; 2 usage error. See docs/cli.md#check.

Flags:
`)
		fs.PrintDefaults()
	}
	kubeconfigPath := fs.String("kubeconfig", "", "Path to a kubeconfig (default: the KUBECONFIG variable, ~/.kube/config, else the pod's in-cluster config).")
	namespace := fs.String("namespace", defaultNamespace(), "Namespace of the controller (default: the POD_NAMESPACE variable, else "+DefaultNamespace+").")
	wait := fs.Duration("wait", 0, "Check again every 2s until every check passes or this long has passed; 0 checks once.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "teardown-controller check: unexpected arguments %q\n", fs.Args())
		return ExitUsage
	}
	// client-go's loading rules, not controller-runtime's config package:
	// kubectl-teardown links this package too, and no controller-runtime.
	loader := kubeconfig.Loader(*kubeconfigPath)
	if err := kubeconfig.CheckConfigured(loader, "", *kubeconfigPath); err != nil {
		fmt.Fprintln(stderr, "teardown-controller check:", err)
		return ExitFailed
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		fmt.Fprintln(stderr, "teardown-controller check:", err)
		return ExitFailed
	}
	clients, err := NewClients(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "teardown-controller check:", err)
		return ExitFailed
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results := RunUntil(ctx, clients, Options{Namespace: *namespace, ClientVersion: version.Get().Version}, *wait)
	Print(stdout, results)
	if Failed(results) {
		return ExitFailed
	}
	return ExitOK
}

func defaultNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return DefaultNamespace
}
