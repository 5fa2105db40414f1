/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// The whole lifecycle against the package's real control plane: the first
// Reconcile adds the finalizer and asks the caller to wait; the next one
// proceeds; after DELETE the handler runs and the object goes away.
func Example() {
	ctx := context.Background()
	c, _ := client.New(cfg, client.Options{}) // a client with no cache
	fin := finalizer.New(finalizer.ForClient(c, nil))
	_ = fin.Register("dns.example.com/record", finalizer.HandlerFunc(
		func(ctx context.Context, obj client.Object) finalizer.Result {
			fmt.Println("deleting the DNS record of", obj.GetName())
			return finalizer.Done()
		}))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "example-lifecycle", Namespace: "default"}}
	_ = c.Create(ctx, cm)

	out, _ := fin.Reconcile(ctx, cm)
	fmt.Println("added:", out.Added, "proceed:", out.Proceed)
	out, _ = fin.Reconcile(ctx, cm)
	fmt.Println("proceed:", out.Proceed)

	_ = c.Delete(ctx, cm)
	_ = c.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	fmt.Println("terminating:", cm.DeletionTimestamp != nil)
	out, _ = fin.Reconcile(ctx, cm)
	fmt.Println("removed:", out.Removed)

	err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	fmt.Println("gone:", apierrors.IsNotFound(err))
	// Output:
	// added: [dns.example.com/record] proceed: false
	// proceed: true
	// terminating: true
	// deleting the DNS record of example-lifecycle
	// removed: [dns.example.com/record]
	// gone: true
}

// A handler that polls an external system answers Pending until it is done;
// one that cannot succeed and may leak on purpose answers Release.
func ExampleHandlerFunc() {
	remaining := 2
	h := finalizer.HandlerFunc(func(ctx context.Context, obj client.Object) finalizer.Result {
		if remaining > 0 {
			remaining--
			return finalizer.Pending(5*time.Second, fmt.Sprintf("%d load balancers left", remaining+1))
		}
		return finalizer.Done()
	})
	for range 3 {
		fmt.Println(h.Finalize(context.Background(), &corev1.Service{}))
	}
	fmt.Println(finalizer.Release("the cloud account was closed"))
	// Output:
	// Pending (check again in 5s): 2 load balancers left
	// Pending (check again in 5s): 1 load balancers left
	// Done
	// Release: the cloud account was closed
}

func ExampleValidateName() {
	fmt.Println(finalizer.ValidateName("my.custom/finalizer"))
	fmt.Println(finalizer.ValidateName("cleanup"))
	// Output:
	// <nil>
	// invalid finalizer name "cleanup": must be domain-qualified, like example.com/cleanup
}

// Drain is the uninstall path: it removes a finalizer from every object of a
// kind so nothing is left stuck once its controller is gone.
func ExampleDrain() {
	ctx := context.Background()
	c, _ := client.New(cfg, client.Options{})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example-drain"}}
	_ = c.Create(ctx, ns)
	for _, name := range []string{"a", "b"} {
		_ = c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns.Name, Finalizers: []string{"old-controller.example.com/cleanup"}}})
	}
	report, err := finalizer.Drain(ctx, c, corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		"old-controller.example.com/cleanup", client.InNamespace(ns.Name))
	fmt.Println(report.Removed, err)
	// Output:
	// [example-drain/a example-drain/b] <nil>
}
