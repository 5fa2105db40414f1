/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command devcluster is `make cluster`: it runs a local control plane (etcd,
// kube-apiserver, kube-controller-manager) until Ctrl-C and prints the
// KUBECONFIG to use with kubectl or a controller under development.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/teardown-dev/teardown/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		os.Exit(1)
	}
}

func run() (retErr error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := testenv.ModuleRoot()
	if err != nil {
		return err
	}
	env, err := testenv.Start(testenv.Options{Dir: filepath.Join(root, "_out", "cluster"), Log: os.Stderr})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "stopping the control plane")
		if err := env.Stop(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	kubeconfig, err := filepath.Abs(env.Kubeconfig)
	if err != nil {
		return err
	}
	kubectl := "kubectl"
	if assets, err := testenv.AssetsDir(); err == nil {
		kubectl = filepath.Join(assets, "kubectl")
	}
	fmt.Printf("export KUBECONFIG=%s\n", kubeconfig)
	fmt.Fprintf(os.Stderr, "try: %s get namespaces\nlogs: %s\nPress Ctrl-C to stop.\n",
		kubectl, filepath.Join(env.Dir, "kube-controller-manager.log"))
	<-ctx.Done()
	stop() // a second Ctrl-C kills at once
	return nil
}
