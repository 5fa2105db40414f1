/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/teardown-dev/teardown/examples/service-finalizer/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// startController runs a controller for the Services of ns until the test
// ends. extra, if set, is added to the same Service informer the controller
// uses, so it sees exactly the events the controller sees.
func startController(t *testing.T, ns string, dns *controller.FakeDNS, extra cache.ResourceEventHandler) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	services := factory.Core().V1().Services()
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		t.Fatalf("starting the Event broadcaster: %v", err)
	}
	c, err := controller.New(ctx, dyn, services, dns, controller.Options{
		RecheckAfter:  100 * time.Millisecond,
		EventRecorder: broadcaster.NewRecorder(scheme.Scheme, controller.ControllerName),
	})
	if err != nil {
		cancel()
		t.Fatalf("creating the controller: %v", err)
	}
	if extra != nil {
		if _, err := services.Informer().AddEventHandler(extra); err != nil {
			cancel()
			t.Fatalf("adding the test's event handler: %v", err)
		}
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
		factory.Shutdown()
		broadcaster.Shutdown()
	})
}

// observer records each distinct state of the Services an informer shows,
// and counts the delete events: what a controller that cleans up from a
// DeleteFunc, the common tutorial pattern, would be told and when.
type observer struct {
	dns *controller.FakeDNS

	mu      sync.Mutex
	states  []string
	deletes int
	gone    chan struct{}
}

func newObserver(dns *controller.FakeDNS) *observer {
	return &observer{dns: dns, gone: make(chan struct{})}
}

func (o *observer) handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    o.saw,
		UpdateFunc: func(_, obj any) { o.saw(obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			svc := obj.(*corev1.Service)
			// The record is checked the moment the Service is gone: if the
			// finalizer had been removed before the cleanup finished, the
			// record would still be there.
			_, present := o.dns.Lookup(controller.RecordName(svc))
			o.mu.Lock()
			defer o.mu.Unlock()
			o.deletes++
			o.add(fmt.Sprintf("Gone deleteEvents=%d dnsRecord=%s", o.deletes, map[bool]string{true: "present", false: "absent"}[present]))
			close(o.gone)
		},
	}
}

func (o *observer) saw(obj any) {
	svc := obj.(*corev1.Service)
	phase := "Active"
	if svc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	progress := "none"
	for _, p := range finalizer.ReadProgress(svc) {
		progress = string(p.State)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.add(fmt.Sprintf("%s finalizers=%v progress=%s deleteEvents=%d", phase, svc.Finalizers, progress, o.deletes))
}

// add appends s unless it repeats the last state. Call with mu held.
func (o *observer) add(s string) {
	if len(o.states) == 0 || o.states[len(o.states)-1] != s {
		o.states = append(o.states, s)
	}
}

func (o *observer) observed() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.states)
}

// TestDeletionWaitsForDeregistration creates the example's Service from
// service.yaml, deletes it, and proves from the controller's own informer
// that the Service stayed Terminating, with the finalizer and a Pending
// progress record, until its DNS record was deregistered; that the delete
// event a DeleteFunc-based controller relies on fired only after all that,
// once the Service was gone; and that the record was removed exactly once.
func TestDeletionWaitsForDeregistration(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	ns := newNamespace(t)
	dns := controller.NewFakeDNS(time.Second)
	obs := newObserver(dns)
	startController(t, ns, dns, obs.handlers())

	svc := manifest(t, ns)
	record := controller.RecordName(svc)
	services := cs.CoreV1().Services(ns)
	if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Service: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, "the DNS record to be registered", func(context.Context) (bool, error) {
		_, ok := dns.Lookup(record)
		return ok, nil
	})

	if err := services.Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the Service: %v", err)
	}
	select {
	case <-obs.gone:
	case <-time.After(30 * time.Second):
		t.Fatalf("the Service was not deleted; states seen: %q", obs.observed())
	}

	want := []string{
		"Active finalizers=[my.custom/finalizer] progress=none deleteEvents=0",
		// DELETE only set deletionTimestamp: the Service stays, and a
		// DeleteFunc has not been called.
		"Terminating finalizers=[my.custom/finalizer] progress=none deleteEvents=0",
		"Terminating finalizers=[my.custom/finalizer] progress=Pending deleteEvents=0",
		// The one delete event comes after the cleanup finished.
		"Gone deleteEvents=1 dnsRecord=absent",
	}
	if diff := cmp.Diff(want, obs.observed()); diff != "" {
		t.Errorf("states of the Service seen by the informer (-want +got):\n%s", diff)
	}

	stats := dns.Stats(record)
	if stats.Registrations != 1 || stats.Removals != 1 {
		t.Errorf("DNS record %s: %d registrations and %d removals, want exactly 1 of each", record, stats.Registrations, stats.Removals)
	}
	if stats.DeregisterCalls < 2 {
		t.Errorf("DNS record %s: %d deregister calls, want at least 2 (pending, then done)", record, stats.DeregisterCalls)
	}
	if _, err := services.Get(ctx, svc.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("reading the Service after its delete event: got %v, want NotFound", err)
	}
}

// TestUndeclaredServiceIsNotGuarded shows the Declared attach policy: a
// Service whose manifest does not carry the finalizer gets neither the
// finalizer nor a DNS record, and its deletion is immediate.
func TestUndeclaredServiceIsNotGuarded(t *testing.T) {
	testenv.SkipShort(t)
	ctx := t.Context()
	ns := newNamespace(t)
	dns := controller.NewFakeDNS(0)
	startController(t, ns, dns, nil)
	services := cs.CoreV1().Services(ns)

	plain := manifest(t, ns)
	plain.Name, plain.Finalizers = "plain", nil
	if _, err := services.Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the plain Service: %v", err)
	}
	// A guarded Service created after it: once its record exists, the
	// controller has seen both.
	guarded := manifest(t, ns)
	if _, err := services.Create(ctx, guarded, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the guarded Service: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, "the guarded Service's DNS record", func(context.Context) (bool, error) {
		_, ok := dns.Lookup(controller.RecordName(guarded))
		return ok, nil
	})

	got, err := services.Get(ctx, plain.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the plain Service: %v", err)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("plain Service finalizers = %v, want none", got.Finalizers)
	}
	if _, ok := dns.Lookup(controller.RecordName(plain)); ok {
		t.Errorf("plain Service got a DNS record")
	}
	if err := services.Delete(ctx, plain.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the plain Service: %v", err)
	}
	if _, err := services.Get(ctx, plain.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("reading the plain Service right after DELETE: got %v, want NotFound", err)
	}
}

// TestWalkthrough runs the narrated scenario of `make demo`, which checks
// itself that the Service goes Terminating, shows a Pending cleanup and then
// disappears, in that order.
func TestWalkthrough(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	dns := controller.NewFakeDNS(500 * time.Millisecond)
	startController(t, ns, dns, nil)

	var out bytes.Buffer
	err := controller.Walkthrough(t.Context(), cs, manifest(t, ns), dns, &out)
	t.Logf("walkthrough:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
}
