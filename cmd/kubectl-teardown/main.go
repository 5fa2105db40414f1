/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command kubectl-teardown is the kubectl plugin of Teardown: it explains why
// an object or a namespace is stuck in Terminating, previews a deletion, shows
// teardown progress and removes a finalizer safely.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/teardown-dev/teardown/internal/plugin"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(plugin.Execute(streams, os.Args[1:]))
}
