/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package kubeconfig says, before anything connects, that no cluster is
// configured, and where it looked: kubectl-teardown's commands,
// teardown-controller uninstall and check share it.
package kubeconfig

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// CheckConfigured fails when nothing names a cluster: no kubeconfig with
// anything in it (loader), no server given (server), not running in a pod.
// client-go would then fall back to http://localhost:8080 (or ask for
// KUBERNETES_MASTER), and the user would read "connection refused" from a
// server they never named. explicitPath is the --kubeconfig given, if any.
// Any other kubeconfig problem is left to the loader, whose errors already
// name the file or context.
func CheckConfigured(loader clientcmd.ClientConfig, server, explicitPath string) error {
	if server != "" {
		return nil
	}
	// clientcmd's own default server, as kubectl honours it.
	if os.Getenv("KUBERNETES_MASTER") != "" {
		return nil
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return nil
	}
	raw, err := loader.RawConfig()
	if err != nil {
		return nil
	}
	// An empty configuration is what clientcmd refuses as ErrEmptyConfig.
	if _, err := clientcmd.NewDefaultClientConfig(raw, &clientcmd.ConfigOverrides{}).ClientConfig(); !clientcmd.IsEmptyConfig(err) {
		return nil
	}
	var files []string
	for _, p := range loader.ConfigAccess().GetLoadingPrecedence() {
		if _, err := os.Stat(p); err != nil {
			files = append(files, p+" does not exist")
		} else {
			files = append(files, p+" names no cluster")
		}
	}
	where := "no kubeconfig file"
	if len(files) > 0 {
		where = strings.Join(files, ", ")
	}
	if v, ok := os.LookupEnv(clientcmd.RecommendedConfigPathEnvVar); ok && explicitPath == "" {
		where = clientcmd.RecommendedConfigPathEnvVar + "=" + v + ": " + where
	}
	return fmt.Errorf("no cluster is configured (%s), and this is not a pod in a cluster: name one with --kubeconfig, the KUBECONFIG variable, or --server", where)
}

// Loader is client-go's default loader with explicitPath (--kubeconfig) in
// front, as kubectl and controller-runtime load.
func Loader(explicitPath string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicitPath
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
}
