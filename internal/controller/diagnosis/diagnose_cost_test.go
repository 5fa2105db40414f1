/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// countingTransport counts the requests that go through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestDiagnosisCost measures one diagnosis pass over stuck objects: the
// API requests and the time of the first object (the pass's shared reads)
// and of each further one, with the controller's shipped RBAC and with an
// admin's rights (docs/performance.md, "Proactive diagnosis"). Each
// guarded object's delete step waits on its own ConfigMap held by a
// finalizer nobody removes; the objects sit in two namespaces.
//
// It bounds what a further object may cost, so that a change that makes
// the engine read per object what it should read once per pass fails here.
func TestDiagnosisCost(t *testing.T) {
	testenv.SkipShort(t)
	const perNamespace = 10
	var waits []steps.Wait
	for range 2 {
		ns := testenv.NewNamespace(t, admin)
		for i := range perNamespace {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("held-%d", i), Namespace: ns, Finalizers: []string{"example.com/never"}}}
			if err := admin.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			if err := admin.Delete(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				cm.Finalizers = nil
				_ = admin.Update(t.Context(), cm)
			})
			waits = append(waits, steps.Wait{Step: "delete-leftovers", Action: "delete",
				On: []steps.WaitRef{{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: ns, Name: cm.Name}}})
		}
	}
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "cost"}}
	for _, who := range []struct {
		name string
		cfg  *rest.Config
		// maxFurther bounds the requests of an object after the first of
		// its namespace.
		maxFurther int64
	}{
		{"shipped RBAC", controllerCfg, 2},
		{"admin", adminCfg, 2},
	} {
		t.Run(who.name, func(t *testing.T) {
			var n atomic.Int64
			cfg := rest.CopyConfig(who.cfg)
			cfg.QPS, cfg.Burst = 1000, 1000 // measure the engine, not client-go's rate limiter
			counted := rest.CopyConfig(cfg)
			counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &n} })
			httpClient, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
			if err != nil {
				t.Fatal(err)
			}
			requests := make([]int64, len(waits))
			took := make([]time.Duration, len(waits))
			last := int64(0)
			start := time.Now()
			got, err := diagnosis.DiagnoseWaits(t.Context(), counted, mapper, pol, "teardown.dev/cost", waits, func(i int, d time.Duration) {
				requests[i], took[i] = n.Load()-last, d
				last = n.Load()
			})
			if err != nil {
				t.Fatal(err)
			}
			total := time.Since(start)
			for i, g := range got {
				if !strings.Contains(g, "example.com/never") {
					t.Errorf("object %d: diagnosis %q does not name the finalizer", i, g)
				}
			}
			var further int64
			var furtherTime time.Duration
			for i := range waits {
				if i == 0 || i == perNamespace {
					continue
				}
				further += requests[i]
				furtherTime += took[i]
				if requests[i] > who.maxFurther {
					t.Errorf("object %d cost %d requests, want at most %d", i, requests[i], who.maxFurther)
				}
			}
			k := int64(len(waits) - 2)
			t.Logf("%s: %q", who.name, got[0])
			t.Logf("%s: %d objects in 2 namespaces: %d requests, %s; first object %d requests, %s; first of the second namespace %d requests, %s; each further object %.1f requests, %s on average",
				who.name, len(waits), n.Load(), total.Round(time.Millisecond), requests[0], took[0].Round(time.Millisecond),
				requests[perNamespace], took[perNamespace].Round(time.Millisecond),
				float64(further)/float64(k), (furtherTime / time.Duration(k)).Round(100*time.Microsecond))
		})
	}
}

// TestNamespaceDiagnosisCost measures what --diagnose-kinds=namespaces costs
// per stuck namespace: the engine walks what the namespace still holds,
// one list per namespaced kind, and explains each object held.
func TestNamespaceDiagnosisCost(t *testing.T) {
	testenv.SkipShort(t)
	const namespaces = 3
	var waits []steps.Wait
	for range namespaces {
		ns := testenv.NewNamespace(t, admin)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns, Finalizers: []string{"example.com/never"}}}
		if err := admin.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cm.Finalizers = nil
			_ = admin.Update(context.Background(), cm)
		})
		if err := admin.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		waits = append(waits, steps.Wait{Step: "-", Action: "kinds", On: []steps.WaitRef{{GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Name: ns}}})
	}
	// Let the namespace controller delete the content and report what
	// remains: the ConfigMaps are then held by their finalizer alone.
	for _, w := range waits {
		testenv.Eventually(t, 60*time.Second, "the namespace controller to delete the content of "+w.On[0].Name, func(ctx context.Context) (bool, error) {
			cm := &corev1.ConfigMap{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: w.On[0].Name, Name: "held"}, cm); err != nil {
				return false, err
			}
			return cm.DeletionTimestamp != nil, nil
		})
	}
	time.Sleep(2 * time.Second) // and its conditions
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "cost"}}
	for _, who := range []struct {
		name string
		cfg  *rest.Config
	}{{"shipped RBAC", controllerCfg}, {"admin", adminCfg}} {
		t.Run(who.name, func(t *testing.T) {
			var n atomic.Int64
			counted := rest.CopyConfig(who.cfg)
			counted.QPS, counted.Burst = 1000, 1000
			counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &n} })
			httpClient, err := rest.HTTPClientFor(who.cfg)
			if err != nil {
				t.Fatal(err)
			}
			mapper, err := apiutil.NewDynamicRESTMapper(who.cfg, httpClient)
			if err != nil {
				t.Fatal(err)
			}
			requests := make([]int64, len(waits))
			took := make([]time.Duration, len(waits))
			last := int64(0)
			got, err := diagnosis.DiagnoseWaits(t.Context(), counted, mapper, pol, "teardown.dev/cost", waits, func(i int, d time.Duration) {
				requests[i], took[i] = n.Load()-last, d
				last = n.Load()
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				t.Logf("%s: namespace %d: %d requests, %s: %q", who.name, i, requests[i], took[i].Round(time.Millisecond), g)
				if !strings.Contains(g, "example.com/never") {
					t.Errorf("namespace %d: diagnosis %q does not name the finalizer", i, g)
				}
				// One list per namespaced kind (about 35 here), and what the
				// session shares once.
				if i > 0 && requests[i] > 60 {
					t.Errorf("namespace %d cost %d requests, want at most 60", i, requests[i])
				}
			}
		})
	}
}
