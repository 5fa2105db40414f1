/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command kustomize prints the build of a kustomization folder, as `kubectl
// kustomize DIR` does, with the kustomize library kubectl itself links
// (sigs.k8s.io/kustomize/api, pinned by cli-runtime in go.mod). make deploy
// and make release-manifests use it, so that they need no kubectl binary
// to build config/default on a fresh clone.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/kustomize DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "kustomize:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	// kubectl kustomize's defaults: no plugins, load restricted to the
	// kustomization's root, and its legacy order (Namespaces and CRDs
	// first), which kubectl apply needs.
	o := krusty.MakeDefaultOptions()
	o.Reorder = krusty.ReorderOptionLegacy
	k := krusty.MakeKustomizer(o)
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return fmt.Errorf("building %s: %w", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
