/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command chart writes the generated part of charts/teardown from config/
// (make chart): the CRDs, RBAC, admission policies and monitoring objects as
// templates, and the Grafana dashboard. See internal/chart.
package main

import (
	"fmt"
	"os"

	"github.com/teardown-dev/teardown/internal/chart"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run() error {
	// make runs it in the module root.
	root := "."
	if _, err := os.Stat(chart.Dir); err != nil {
		return fmt.Errorf("run it in the module root (make chart): %w", err)
	}
	files, err := chart.Generate(root)
	if err != nil {
		return err
	}
	if err := chart.Write(root, files); err != nil {
		return err
	}
	for _, name := range chart.Sorted(files) {
		fmt.Printf("%s/%s\n", chart.Dir, name)
	}
	return nil
}
