/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/teardown-dev/teardown/examples/service-finalizer/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// The package's tests share one real control plane.
var (
	cs  kubernetes.Interface
	dyn dynamic.Interface
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) {
		cs = kubernetes.NewForConfigOrDie(e.Config)
		dyn = dynamic.NewForConfigOrDie(e.Config)
	})
}

// testContext returns the test's context carrying a logger that writes to
// the test's log.
func testContext(t *testing.T) context.Context {
	logger, _ := ktesting.NewTestContext(t)
	return klog.NewContext(t.Context(), logger)
}

var nsCounter atomic.Int64

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", strings.ToLower(t.Name()), nsCounter.Add(1))
	if len(name) > 63 {
		name = strings.TrimLeft(name[len(name)-63:], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// manifest returns the example's Service manifest, ../service.yaml, in ns.
func manifest(t *testing.T, ns string) *corev1.Service {
	t.Helper()
	data, err := os.ReadFile("../service.yaml")
	if err != nil {
		t.Fatalf("reading the manifest: %v", err)
	}
	svc, err := controller.DecodeService(data)
	if err != nil {
		t.Fatal(err)
	}
	svc.Namespace = ns
	return svc
}
