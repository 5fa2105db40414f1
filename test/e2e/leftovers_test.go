//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// keyAnnotations are the prefixes of the annotations the controller writes
// on the objects it guards (the attach record, a teardown's progress and
// its steps' state).
var keyAnnotations = []string{"attached.finalizer.teardown.dev/", "progress.finalizer.teardown.dev/", "steps.teardown.dev/"}

// leftovers lists every object of every listable kind in the cluster that
// is Terminating, or carries a Teardown key (a finalizer of a teardown.dev
// domain) or one of the controller's annotations: what helm uninstall must
// not leave behind. (Labels such as teardown.dev/aggregate-to-controller
// on a kept ClusterRole are the user's, not a key.)
func leftovers(t *testing.T) []string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.WarningHandler = rest.NoWarnings{} // deprecated kinds, listed on purpose
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := discovery.ServerPreferredResources(dc)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var found []string
	for _, l := range lists {
		gv, err := schemaGV(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if !contains(r.Verbs, "list") || strings.Contains(r.Name, "/") {
				continue
			}
			objs, err := mc.Resource(gv.WithResource(r.Name)).List(context.Background(), metav1.ListOptions{}) // also from cleanups, after t.Context() is done
			if err != nil {
				t.Fatalf("listing %s: %v", r.Name, err)
			}
			for _, o := range objs.Items {
				id := fmt.Sprintf("%s %s/%s", r.Kind, o.Namespace, o.Name)
				if o.DeletionTimestamp != nil {
					found = append(found, id+": Terminating, finalizers "+strings.Join(o.Finalizers, ","))
				}
				for _, f := range o.Finalizers {
					if strings.Contains(f, "teardown.dev") {
						found = append(found, id+": finalizer "+f)
					}
				}
				for k := range o.Annotations {
					for _, p := range keyAnnotations {
						if strings.HasPrefix(k, p) {
							found = append(found, id+": annotation "+k)
						}
					}
				}
			}
		}
	}
	return found
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func schemaGV(s string) (schema.GroupVersion, error) { return schema.ParseGroupVersion(s) }

// noLeftovers waits until leftovers finds nothing: pods of an uninstalled
// release may still be shutting down when helm returns.
func noLeftovers(t *testing.T, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "nothing left Terminating and no Teardown key on any object", func() error {
		if l := leftovers(t); len(l) > 0 {
			return fmt.Errorf("%d left:\n%s", len(l), strings.Join(l, "\n"))
		}
		return nil
	})
}
