/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"flag"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// The package's proofs share one real control plane.
var (
	cfg            *rest.Config
	kubeconfigPath string
	k8s            client.Client
	cs             kubernetes.Interface
)

func TestMain(m *testing.M) {
	if os.Getenv(childModeEnv) != "" {
		// Re-executed by TestRestartMidCleanup as a controller process.
		os.Exit(runChild())
	}
	if fuzzingOnly() {
		os.Exit(m.Run())
	}
	// Example and ExampleDrain run against the control plane.
	testenv.Main(m, testenv.Options{Examples: []string{"Example", "ExampleDrain"}}, func(e *testenv.Env) {
		cfg = e.Config
		kubeconfigPath = e.Kubeconfig
		var err error
		if k8s, err = client.New(cfg, client.Options{}); err != nil {
			panic(err)
		}
		cs = kubernetes.NewForConfigOrDie(cfg)
	})
}

// fuzzingOnly reports whether this process only fuzzes (a fuzzing worker,
// or go test -fuzz with -run '^$', as make fuzz runs it): the Fuzz functions
// need no control plane, and starting one per process would only slow them.
func fuzzingOnly() bool {
	flag.Parse()
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return value("test.fuzzworker") == "true" || (value("test.fuzz") != "" && value("test.run") == "^$" && value("test.bench") == "")
}

// configMap creates a ConfigMap carrying finalizers.
func configMap(t *testing.T, ns, name string, finalizers ...string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers}}
	if err := k8s.Create(t.Context(), cm); err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}
