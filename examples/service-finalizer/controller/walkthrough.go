/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// WalkthroughTimeout bounds each wait of the walkthrough.
const WalkthroughTimeout = 30 * time.Second

// DecodeService decodes a Service manifest such as service.yaml.
func DecodeService(manifest []byte) (*corev1.Service, error) {
	svc := &corev1.Service{}
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(manifest, nil, svc); err != nil {
		return nil, fmt.Errorf("decoding the Service manifest: %w", err)
	}
	return svc, nil
}

// Walkthrough creates svc, which must declare FinalizerName, waits for the
// controller to register its DNS record, deletes it, and narrates to w every
// state of the Service seen on a watch until it is gone, as a person running
// kubectl would see them. It fails if the Service does not go Terminating,
// show its cleanup in progress and then disappear, in that order, or if the
// cleanup's Event is not recorded. A Controller using dns and an Event
// recorder must be running.
func Walkthrough(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service, dns *FakeDNS, w io.Writer) error {
	if !slices.Contains(svc.Finalizers, FinalizerName) {
		return fmt.Errorf("service %s does not declare the finalizer %s", svc.Name, FinalizerName)
	}
	services := cs.CoreV1().Services(svc.Namespace)
	record := RecordName(svc)

	step(w, "Creating Service %s/%s, whose manifest declares metadata.finalizers: %v", svc.Namespace, svc.Name, svc.Finalizers)
	created, err := services.Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the Service: %w", err)
	}
	say(w, "created, uid %s, clusterIP %s", created.UID, created.Spec.ClusterIP)

	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, WalkthroughTimeout, true, func(context.Context) (bool, error) {
		_, ok := dns.Lookup(record)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the controller to register DNS record %s: %w", record, err)
	}
	target, _ := dns.Lookup(record)
	say(w, "the controller registered DNS record %s -> %s", record, target)

	current, err := services.Get(ctx, svc.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Service: %w", err)
	}
	watcher, err := services.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", svc.Name).String(),
		ResourceVersion: current.ResourceVersion,
	})
	if err != nil {
		return fmt.Errorf("watching the Service: %w", err)
	}
	defer watcher.Stop()

	step(w, "Deleting Service %s/%s (kubectl delete service %s -n %s)", svc.Namespace, svc.Name, svc.Name, svc.Namespace)
	if err := services.Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting the Service: %w", err)
	}
	deleted := time.Now()
	say(w, "DELETE accepted; watching the Service")
	if err := narrateDeletion(ctx, watcher, deleted, w); err != nil {
		return err
	}

	_, err = services.Get(ctx, svc.Name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("the watch said the Service was deleted, but reading it answered %w", err)
	}
	say(w, "kubectl get service %s -n %s: NotFound", svc.Name, svc.Namespace)
	if _, ok := dns.Lookup(record); ok {
		return fmt.Errorf("the Service is gone but DNS record %s is still there", record)
	}
	say(w, "DNS record %s: gone", record)

	step(w, "Events about the Service (kubectl get events --field-selector involvedObject.name=%s)", svc.Name)
	return narrateEvents(ctx, cs, created, w)
}

// narrateEvents waits for the Event the cleanup recorded while it was
// pending, and prints the Service's Events.
func narrateEvents(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service, w io.Writer) error {
	selector := fields.Set{"involvedObject.name": svc.Name, "involvedObject.uid": string(svc.UID)}.AsSelector().String()
	var list *corev1.EventList
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, WalkthroughTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		list, err = cs.CoreV1().Events(svc.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(e corev1.Event) bool { return e.Reason == finalizer.ReasonCleanupPending }), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the %s Event: %w", finalizer.ReasonCleanupPending, err)
	}
	for _, e := range list.Items {
		say(w, "%s %s (%s): %s", e.Type, e.Reason, e.ReportingController, e.Message)
	}
	return nil
}

// narrateDeletion prints each new state of the Service from watcher until
// it is deleted, and checks the states came in the right order.
func narrateDeletion(ctx context.Context, watcher watch.Interface, deleted time.Time, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, WalkthroughTimeout)
	defer cancel()
	annotation := finalizer.ProgressAnnotation(FinalizerName)
	var terminating, pending bool
	var lastProgress string
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the Service to be gone: %w", ctx.Err())
		case e, ok := <-watcher.ResultChan():
			if !ok {
				return errors.New("the watch on the Service closed before it was gone")
			}
			ev = e
		}
		at := fmt.Sprintf("+%.1fs", time.Since(deleted).Seconds())
		switch ev.Type {
		case watch.Modified:
			s, ok := ev.Object.(*corev1.Service)
			if !ok || s.DeletionTimestamp == nil {
				continue
			}
			if !terminating {
				terminating = true
				say(w, "%s Terminating: deletionTimestamp=%s, finalizers=%v: the API server keeps the Service until the finalizer is removed",
					at, s.DeletionTimestamp.UTC().Format(time.RFC3339), s.Finalizers)
			}
			if p := s.Annotations[annotation]; p != "" && p != lastProgress {
				lastProgress = p
				if progress := finalizer.ReadProgress(s); len(progress) > 0 && progress[0].State == finalizer.StatePending {
					pending = true
				}
				say(w, "%s cleanup in progress: %s=%s", at, annotation, p)
			}
		case watch.Deleted:
			if !terminating || !pending {
				return fmt.Errorf("the Service was deleted without being seen Terminating (%t) with its cleanup pending (%t)", terminating, pending)
			}
			say(w, "%s finalizer %s removed by the controller; no finalizer left, so the API server deleted the Service", at, FinalizerName)
			return nil
		case watch.Error:
			return fmt.Errorf("watching the Service: %w", apierrors.FromObject(ev.Object))
		}
	}
}

func step(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "==> "+format+"\n", args...)
}

func say(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "    "+format+"\n", args...)
}
