/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// checkClusterConfigured fails when nothing names a cluster: no kubeconfig
// with anything in it, no --server, not running in a pod. client-go would
// then fall back to http://localhost:8080 (cli-runtime's default server),
// and the user would read "connection refused" from a server they never
// named. Any other kubeconfig problem is left to the loader, whose errors
// already name the file or context.
func checkClusterConfigured(f *genericclioptions.ConfigFlags) error {
	if f.APIServer != nil && *f.APIServer != "" {
		return nil
	}
	// clientcmd's own default server, as kubectl honours it.
	if os.Getenv("KUBERNETES_MASTER") != "" {
		return nil
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return nil
	}
	loader := f.ToRawKubeConfigLoader()
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
	if v, ok := os.LookupEnv(clientcmd.RecommendedConfigPathEnvVar); ok && (f.KubeConfig == nil || *f.KubeConfig == "") {
		where = clientcmd.RecommendedConfigPathEnvVar + "=" + v + ": " + where
	}
	return fmt.Errorf("no cluster is configured (%s), and this is not a pod in a cluster: name one with --kubeconfig, the KUBECONFIG variable, or --server", where)
}
