/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command widgetop is the e2e tests' operator (issue 28): it reconciles
// Widgets (widgets.example.com/v1) in every namespace, adds its finalizer to
// each, and when one is deleted calls the external system (CLEANUP_URL, an
// HTTP server the test runs) before it removes the finalizer, as an
// operator guarding a cloud resource does. On SIGTERM it stops at once,
// abandoning a call in flight, as a controller manager cancels its
// reconciles: what an operator deleted before its resources leaves behind.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// finalizer is the operator's key on its Widgets.
const finalizer = "widgets.example.com/cleanup"

var widgets = schema.GroupVersionResource{Group: "widgets.example.com", Version: "v1", Resource: "widgets"}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("widgetop (teardown e2e)")
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "widgetop: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("widgetop: stopped")
}

func run(ctx context.Context) error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	url := os.Getenv("CLEANUP_URL")
	hc := &http.Client{Timeout: 30 * time.Second}
	for ctx.Err() == nil {
		list, err := dyn.Resource(widgets).List(ctx, metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(os.Stderr, "widgetop: listing widgets: %v\n", err)
		} else {
			for i := range list.Items {
				if err := reconcile(ctx, dyn, hc, url, &list.Items[i]); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "widgetop: %s/%s: %v\n", list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// reconcile adds the finalizer to a live Widget, and for one being deleted
// calls the external system, then removes it. Its writes carry the
// resourceVersion read, so a stale copy writes nothing.
func reconcile(ctx context.Context, dyn dynamic.Interface, hc *http.Client, url string, w *unstructured.Unstructured) error {
	fins := w.GetFinalizers()
	has := slices.Contains(fins, finalizer)
	switch {
	case w.GetDeletionTimestamp() == nil && !has:
		return setFinalizers(ctx, dyn, w, append(fins, finalizer))
	case w.GetDeletionTimestamp() != nil && has:
		body := fmt.Sprintf("%s/%s/%s", w.GetNamespace(), w.GetName(), w.GetUID())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("cleanup call: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("cleanup call: %s", resp.Status)
		}
		fmt.Printf("widgetop: cleaned up %s\n", body)
		return setFinalizers(ctx, dyn, w, slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return f == finalizer }))
	}
	return nil
}

func setFinalizers(ctx context.Context, dyn dynamic.Interface, w *unstructured.Unstructured, fins []string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fins, "resourceVersion": w.GetResourceVersion()}})
	if err != nil {
		return err
	}
	_, err = dyn.Resource(widgets).Namespace(w.GetNamespace()).Patch(ctx, w.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
