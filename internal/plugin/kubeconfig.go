/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/teardown-dev/teardown/internal/kubeconfig"
)

// checkClusterConfigured fails when nothing names a cluster
// (kubeconfig.CheckConfigured).
func checkClusterConfigured(f *genericclioptions.ConfigFlags) error {
	server, explicit := "", ""
	if f.APIServer != nil {
		server = *f.APIServer
	}
	if f.KubeConfig != nil {
		explicit = *f.KubeConfig
	}
	return kubeconfig.CheckConfigured(f.ToRawKubeConfigLoader(), server, explicit)
}
