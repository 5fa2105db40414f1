/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// The package's tests share one real control plane; each test runs its own
// manager, watching only its own namespace.
var (
	cfg *rest.Config
	// k8s reads and writes the API server directly, never a cache.
	k8s client.Client
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) {
		// Managers get a per-test logger; this one only catches stragglers.
		ctrl.SetLogger(klog.Background())
		cfg = e.Config
		var err error
		if k8s, err = client.New(cfg, client.Options{}); err != nil {
			panic(err)
		}
	})
}
