/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/teardown-dev/teardown/internal/diagnose"
)

// ExplainOptions is `kubectl teardown explain`.
type ExplainOptions struct {
	genericiooptions.IOStreams
	targetOptions

	Output *outputFlags
	// GCStallAfter is how long the garbage collector may leave a
	// foregroundDeletion or orphan finalizer with nothing to do, or a
	// foreground owner's dependents undeleted, before explain reports it
	// as not progressing.
	GCStallAfter time.Duration

	args []string
	// Now is the clock; tests pin it.
	Now func() time.Time
}

// NewExplainCommand builds `explain`.
func NewExplainCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ExplainOptions{IOStreams: streams, targetOptions: targetOptions{clusterOptions: clusterOptions{flags: flags}}, Now: time.Now, Output: newOutputFlags(false)}
	cmd := &cobra.Command{
		Use:   "explain TYPE/NAME",
		Short: "Explain why an object or a namespace is stuck in Terminating",
		Long: `Explain walks the catalog of causes of stuck deletion for one object or namespace:
for each remaining finalizer, who owns it, whether that owner looks alive, what it
waits on down to the root blocker, and the safe remedy with what it would leak.
Read-only: it only issues GETs, LISTs and server-side dry-runs.

Exit code 3 means a blocker was found. TYPE/NAME and TYPE NAME are both accepted;
TYPE is a resource, a short name, a kind or resource.group, as with kubectl get.`,
		Example: `  kubectl teardown explain namespace/shop
  kubectl teardown explain widgets.example.com w1 -n shop -o json
  kubectl teardown explain namespace/shop -o jsonpath='{.rootBlockers[*].cause}'`,
		Args:              usageArgs(cobra.RangeArgs(1, 2)),
		ValidArgsFunction: completeTypeName(flags),
		RunE:              runE(o),
	}
	o.Output.addFlags(cmd, "a tree", false)
	cmd.Flags().DurationVar(&o.GCStallAfter, "gc-stall-after", diagnose.DefaultGCStallAfter, "how long the garbage collector may leave a foregroundDeletion or orphan finalizer with nothing to do, or a foreground owner's dependents undeleted, before it is reported as not progressing")
	return cmd
}

// Complete reads the arguments and builds the clients, without an API call.
func (o *ExplainOptions) Complete(cmd *cobra.Command, args []string) error {
	o.args = args
	return o.complete(cmd, args)
}

// Validate checks the flags.
func (o *ExplainOptions) Validate() error {
	if o.GCStallAfter <= 0 {
		return usageErrorf("--gc-stall-after must be positive")
	}
	return o.Output.validate()
}

// Run explains and prints; it returns errBlocked when a blocker was found.
func (o *ExplainOptions) Run(ctx context.Context) error {
	var err error
	if o.target, err = o.cluster.resolve(o.typ, o.name); err != nil {
		return err
	}
	ex := diagnose.NewExplainer(o.cluster.read, o.Now()).WithGCStallAfter(o.GCStallAfter)
	// A target that does not exist comes with the error and a report of
	// what the cluster remembers of it: print it, then fail as not found.
	rep, err := ex.Explain(ctx, o.target)
	if rep == nil {
		return err
	}
	if !o.Output.isOwn() {
		if err := o.Output.printReport(o.Out, rep.APIVersion, rep.Kind, rep); err != nil {
			return err
		}
	} else {
		color, err := useColor(o.Color, o.Out)
		if err != nil {
			return err
		}
		diagnose.RenderReport(o.Out, rep, diagnose.Palette{On: color})
	}
	if err != nil {
		return err
	}
	if rep.Blocked || rep.Verdict == diagnose.VerdictStalled {
		return errBlocked
	}
	return nil
}
