/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/bench/report"
)

// unusedRSS measures the controller's memory with opts.unusedPods pods in
// the cluster, without and then with a ClusterTeardownPolicy whose unused
// step makes it index every pod's references.
func (b *bench) unusedRSS(ctx context.Context) error {
	n := b.opts.unusedPods
	m := &report.UnusedRSS{Pods: n}
	b.res.UnusedRSS = m
	if why := b.unusedMissing(ctx); why != "" {
		m.Skipped = why
		b.logf("memory of the unused step: skipped: %s", why)
		return nil
	}
	b.logf("memory of the unused step: %d pods, without and with the policy", n)
	const ns, sa = "unused-rss-pods", "bench-rss"
	if _, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := b.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := parallel(ctx, b.driverWorkers, n, func(ctx context.Context, i int) error {
		_, err := b.kube.CoreV1().Pods(ns).Create(ctx, userPod(ns, fmt.Sprintf("pod-%05d", i), sa), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating the pods: %w", err)
	}
	defer func() {
		if err := b.kube.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			b.logf("  deleting the pods: %v", err)
		}
	}()
	c, err := b.startChild("unused-rss", teardownQueues, filepath.Join(b.bin, "teardown"), b.teardownFlags()...)
	if err != nil {
		return err
	}
	defer c.stop()
	if m.None, m.AnonNone, err = b.settledRSS(ctx, c); err != nil {
		return err
	}
	if m.HeapNone, err = c.heapInuse(ctx); err != nil {
		return err
	}
	sc := waitScenario{name: "unused-rss", unused: true, eventDriven: true}
	// One target torn down proves the index serves the step before memory
	// is read.
	_, stop, err := b.serveWaitScenario(ctx, sc)
	if err != nil {
		return err
	}
	defer stop()
	if m.With, m.AnonWith, err = b.settledRSS(ctx, c); err != nil {
		return err
	}
	if m.HeapWith, err = c.heapInuse(ctx); err != nil {
		return err
	}
	m.PerPod = round(float64(m.With-m.None)/float64(n), 1)
	m.AnonPerPod = round(float64(m.AnonWith-m.AnonNone)/float64(n), 1)
	m.HeapPerPod = round(float64(m.HeapWith-m.HeapNone)/float64(n), 1)
	b.logf("  RSS %.1f MiB without the policy, %.1f MiB with it: %.0f B/pod (RssAnon %.0f B/pod, live heap %.0f B/pod)",
		float64(m.None)/(1<<20), float64(m.With)/(1<<20), m.PerPod, m.AnonPerPod, m.HeapPerPod)
	return nil
}
