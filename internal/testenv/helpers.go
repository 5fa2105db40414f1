/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package testenv

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var namespaceCounter atomic.Int64

// NewNamespace creates a namespace named after the test, so that tests
// sharing a control plane never see each other's objects.
func NewNamespace(t testing.TB, c client.Client) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", strings.ToLower(t.Name()), namespaceCounter.Add(1))
	name = strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(name)
	if len(name) > 60 {
		name = strings.TrimLeft(name[len(name)-60:], "-")
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// Eventually polls cond every 50ms until it holds, failing the test after
// timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Gone is a condition that holds once obj no longer exists.
func Gone(c client.Client, obj client.Object) wait.ConditionWithContextFunc {
	return func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}
