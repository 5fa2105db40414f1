/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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

var nsCounter atomic.Int64

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", strings.ToLower(t.Name()), nsCounter.Add(1))
	if len(name) > 63 {
		name = strings.TrimLeft(name[len(name)-63:], "-")
	}
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
