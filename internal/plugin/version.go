/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/version"
)

// NewVersionCommand builds `version`: the plugin's own build, without a
// call to the cluster.
func NewVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, commit and build date",
		Long: `Version prints the version, commit and build date of this kubectl-teardown
binary (set at release builds, otherwise read from the Go build information). It
does not contact the cluster. --version on the root command prints the same line.`,
		Example: `  kubectl teardown version
  kubectl teardown version -o json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "":
				_, err := fmt.Fprintf(streams.Out, "kubectl-teardown %s\n", info)
				return err
			case "json":
				data, err := json.MarshalIndent(info, "", "    ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(streams.Out, "%s\n", data)
				return err
			case "yaml":
				data, err := yaml.Marshal(info)
				if err != nil {
					return err
				}
				_, err = streams.Out.Write(data)
				return err
			}
			return usageErrorf("unknown output format %q: use json or yaml, or nothing for one line", output)
		},
	}
	cmd.Flags().StringVarP(&output, flagOutput, "o", "", "output format: json or yaml (default: one line)")
	_ = cmd.RegisterFlagCompletionFunc(flagOutput, cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
