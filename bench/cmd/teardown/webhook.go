/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/admit"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// withAttachWebhook serves the attach-at-create webhook (-attach-webhook
// NAME), as the controller suite does and as a cluster would with
// config/webhook: a self-signed certificate for 127.0.0.1 in a temporary
// folder, a free loopback port, and the MutatingWebhookConfiguration name
// calling it by URL, created before the manager starts so that the
// controller only fills in its rules. The benchmark's control plane runs
// on the same machine, so the API server reaches 127.0.0.1. cleanup removes
// the folder.
func withAttachWebhook(cfg *rest.Config, name string, o *controller.ManagerOptions) (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "teardown-bench-webhook-")
	if err != nil {
		return nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		cleanup()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := testenv.InstallMutatingWebhook(ctx, c, dir, name, admit.Path, []string{admit.WebhookName, admit.NamespacedWebhookName})
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("installing the attach webhook: %w", err)
	}
	o.WebhookServer, o.Controller.WebhookConfiguration = w.Server, name
	return cleanup, nil
}
