/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/teardown-dev/teardown/internal/diagnose"
)

// command is the cycle every command's options follow, as kubectl's do:
// check the flags, read the arguments and build the clients, then act.
type command interface {
	Complete(cmd *cobra.Command, args []string) error
	// Validate checks the flags alone: it runs before Complete.
	Validate() error
	Run(ctx context.Context) error
}

// runE is a command's cobra RunE: Validate (the flags, which cobra has
// bound already), Complete, Run. A usage error is found first, so it exits
// 2 whether or not a kubeconfig names a cluster.
func runE(o command) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Validate(); err != nil {
			return err
		}
		if err := o.Complete(cmd, args); err != nil {
			return err
		}
		// Execute gives every command a context (context.Background at
		// the least).
		return o.Run(cmd.Context())
	}
}

// clusterOptions are what every command that reads the cluster shares.
type clusterOptions struct {
	flags   *genericclioptions.ConfigFlags
	Color   string
	cluster *cluster
}

// complete reads --color and builds the clients, without an API call.
func (o *clusterOptions) complete(cmd *cobra.Command) error {
	o.Color, _ = cmd.Flags().GetString(flagColor)
	var err error
	o.cluster, err = newCluster(o.flags)
	return err
}

// targetOptions are what the commands on one object share: its TYPE/NAME
// (or TYPE NAME) arguments, and the object once resolved.
type targetOptions struct {
	clusterOptions
	typ, name string
	target    diagnose.Target
}

// complete reads the arguments and builds the clients, without an API
// call; bad arguments are found before the kubeconfig is read.
func (o *targetOptions) complete(cmd *cobra.Command, args []string) error {
	var err error
	if o.typ, o.name, err = splitTargetArgs(args); err != nil {
		return err
	}
	return o.clusterOptions.complete(cmd)
}
