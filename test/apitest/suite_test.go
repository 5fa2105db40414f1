/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package apitest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	// env is the control plane shared by the package's tests.
	env *testenv.Env
	// root is the module root, for config/.
	root string
)

func TestMain(m *testing.M) {
	var err error
	if root, err = testenv.ModuleRoot(); err != nil {
		fmt.Fprintf(os.Stderr, "finding the module root: %v\n", err)
		os.Exit(1)
	}
	testenv.Main(m, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
	}, func(e *testenv.Env) { env = e })
}

// newClient returns a client for the shared control plane that knows the
// teardown.dev types.
func newClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := teardownv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("creating a client: %v", err)
	}
	return c
}
