/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/installcheck"
	"github.com/teardown-dev/teardown/internal/version"
)

// CheckReport is check's -o json|yaml document.
type CheckReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Passed is false when any check failed (the exit code is then 1).
	Passed bool       `json:"passed"`
	Checks []CheckRow `json:"checks"`
}

// CheckRow is one check: its name, ok, warn or fail, and what it found.
type CheckRow struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Detail string `json:"detail"`
}

// newCheckReport is results as check's report.
func newCheckReport(results []installcheck.Result) *CheckReport {
	rep := &CheckReport{APIVersion: diagnose.ReportAPIVersion, Kind: "CheckReport", Passed: !installcheck.Failed(results), Checks: []CheckRow{}}
	for _, r := range results {
		row := CheckRow{Name: r.Name, Result: "ok", Detail: r.Detail}
		switch {
		case r.Failed:
			row.Result = "fail"
		case r.Warning:
			row.Result = "warn"
		}
		rep.Checks = append(rep.Checks, row)
	}
	return rep
}

// NewCheckCommand builds `kubectl teardown check`: internal/installcheck,
// the same checks as the chart's helm test.
func NewCheckCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var namespace string
	var wait time.Duration
	output := newOutputFlags(false)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Say whether Teardown is installed and working in the cluster",
		Long: `Check says whether Teardown is installed and working: the CRDs established and
served, the admission policies bound, a controller leading with a recently
renewed Lease and a ready Deployment, each enabled admission webhook with a CA
bundle and a ready endpoint, and the CRDs and the controller of one release (a
plugin of another release is a warning). One line per check; the chart's helm
test runs the same checks from inside the cluster.

Exit codes: 0 every check passed, 1 a check failed (each says why) or the
cluster could not be reached, 2 usage.`,
		Example: `  kubectl teardown check
  kubectl teardown check --controller-namespace teardown --wait 2m
  kubectl teardown check -o jsonpath='{.checks[?(@.result=="fail")].name}'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			if err := checkClusterConfigured(flags); err != nil {
				return err
			}
			cfg, err := flags.ToRESTConfig()
			if err != nil {
				return fmt.Errorf("loading the kubeconfig: %w", err)
			}
			cfg = rest.CopyConfig(cfg)
			cfg.UserAgent = "kubectl-teardown"
			clients, err := installcheck.NewClients(cfg)
			if err != nil {
				return err
			}
			results := installcheck.RunUntil(cmd.Context(), clients, installcheck.Options{
				Namespace: namespace, ClientVersion: version.Get().Version,
			}, wait)
			if output.isOwn() {
				installcheck.Print(streams.Out, results)
			} else if err := output.printReport(streams.Out, diagnose.ReportAPIVersion, "CheckReport", newCheckReport(results)); err != nil {
				return err
			}
			if installcheck.Failed(results) {
				return &exitError{code: ExitError, err: errors.New("Teardown is not installed or not working: see the checks marked FAIL")}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&namespace, "controller-namespace", installcheck.DefaultNamespace, "namespace the teardown-controller runs in (the chart's release namespace)")
	output.addFlags(cmd, "one line per check", false)
	cmd.Flags().DurationVar(&wait, "wait", 0, "check again every 2s until every check passes or this long has passed; 0 checks once")
	return cmd
}
