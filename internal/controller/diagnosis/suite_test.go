/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis_test

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	admin    client.Client
	adminCfg *rest.Config
	// controllerCfg authenticates as a user bound to exactly the RBAC that
	// config/ ships.
	controllerCfg *rest.Config
)

func TestMain(m *testing.M) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		panic(err)
	}
	opts := testenv.Options{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}}
	testenv.Main(m, opts, func(e *testenv.Env) {
		adminCfg = e.Config
		scheme, err := controller.NewScheme()
		if err != nil {
			panic(err)
		}
		if admin, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
		if controllerCfg, err = e.AddShippedController(context.Background(), admin, root, "teardown-controller"); err != nil {
			panic(err)
		}
	})
}
