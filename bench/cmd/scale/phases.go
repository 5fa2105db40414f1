/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/bench/apimetrics"
	"github.com/teardown-dev/teardown/bench/scale"
)

// The functions whose CPU is one pass: a policy's status counts (called
// for each policy every --status-interval) and the diagnosis runnable's
// pass.
const (
	statusFocus    = `teardownpolicy\.\(\*Reconciler\)\.count$`
	diagnosisFocus = `diagnosis\.\(\*Diagnoser\)\.Pass$`
)

func (s *scaler) fail(phase string, err error) {
	logf("  FAILED: %s: %v", phase, err)
	s.res.Failed = append(s.res.Failed, fmt.Sprintf("%s: %v", phase, err))
}

func (s *scaler) phases(ctx context.Context) error {
	o := s.opts
	names := make([]string, o.namespaces)
	for i := range names {
		names[i] = nsName(i)
	}
	logf("creating %d namespaces and their RBAC, and %s", o.namespaces, bigNs)
	if err := parallel(ctx, 8, o.namespaces+1, func(ctx context.Context, i int) error {
		if i == o.namespaces {
			return s.createNamespace(ctx, bigNs)
		}
		return s.createNamespace(ctx, names[i])
	}); err != nil {
		return err
	}
	if len(o.growth) > 0 {
		if err := s.growth(ctx, names); err != nil {
			if ctx.Err() != nil {
				return err
			}
			s.fail("policy growth", err)
		}
	}
	logf("creating the remaining policies, the cluster policy and the objects (no controller running)")
	if err := parallel(ctx, 8, o.namespaces+1, func(ctx context.Context, i int) error {
		if i == o.namespaces {
			return s.createPolicy(ctx, bigNs)
		}
		return s.createPolicy(ctx, names[i])
	}); err != nil {
		return err
	}
	if err := s.createClusterPolicy(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	n := o.namespaces*o.objectsPerNs + o.bigNsObjects + o.namespaces + o.pods
	if err := s.createObjects(ctx, names); err != nil {
		return err
	}
	s.res.Create = &scale.Phase{Objects: n, Seconds: time.Since(t0).Seconds()}
	logf("  %d objects in %.0fs (%.0f/s)", n, s.res.Create.Seconds, s.res.Create.Rate())
	s.write() //nolint:errcheck // a partial record; the final write reports errors

	cms, err := s.track(ctx, configMaps, cmValue)
	if err != nil {
		return err
	}
	defer cms.stop()
	sas, err := s.track(ctx, serviceAccounts, userValue)
	if err != nil {
		return err
	}
	defer sas.stop()
	if webhookFlags.only {
		return s.attachWebhook(ctx, cms, sas)
	}
	if err := s.coldStart(ctx, cms, sas); err != nil {
		return err
	}
	if webhookFlags.objects > 0 {
		if err := s.attachWebhook(ctx, cms, sas); err != nil {
			s.fail("attach webhook", err)
		}
	}
	return nil
}

// growth starts a controller with no guarded object and adds
// TeardownPolicies in batches up to each count of -growth.
func (s *scaler) growth(ctx context.Context, names []string) error {
	c, err := s.startController("growth")
	if err != nil {
		return err
	}
	defer c.stop()
	match := map[string]string{"controller": "teardownpolicy"}
	prev := 0
	for _, target := range s.opts.growth {
		logf("policy growth: %d to %d TeardownPolicies", prev, target)
		cpu0 := c.cpu()
		count0, err := c.metric(ctx, "controller_runtime_reconcile_time_seconds_count", match)
		if err != nil {
			return err
		}
		sum0, err := c.metric(ctx, "controller_runtime_reconcile_time_seconds_sum", match)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := parallel(ctx, 8, target-prev, func(ctx context.Context, i int) error {
			return s.createPolicy(ctx, names[prev+i])
		}); err != nil {
			return err
		}
		if err := waitFor(ctx, time.Second, 10*time.Minute, fmt.Sprintf("%d policies Ready", target), func() (bool, string) {
			if err := c.exited(); err != nil {
				return false, err.Error()
			}
			notReady, total, err := s.notReady(ctx)
			if err != nil {
				return false, err.Error()
			}
			return total == target && notReady == 0, fmt.Sprintf("%d of %d not Ready", notReady, total)
		}); err != nil {
			return err
		}
		g := scale.GrowthStep{Policies: target, Added: target - prev, Seconds: time.Since(t0).Seconds(), CPUSeconds: c.cpu() - cpu0}
		count1, err := c.metric(ctx, "controller_runtime_reconcile_time_seconds_count", match)
		if err != nil {
			return err
		}
		sum1, err := c.metric(ctx, "controller_runtime_reconcile_time_seconds_sum", match)
		if err != nil {
			return err
		}
		g.Reconciles, g.ReconcileSeconds = count1-count0, sum1-sum0
		logf("  %d added in %.1fs: %.0f reconciles, mean %.1f ms; controller CPU %.2fs (%.1f ms per policy)",
			g.Added, g.Seconds, g.Reconciles, 1000*g.MeanReconcile(), g.CPUSeconds, 1000*g.PerPolicyCPU())
		s.res.Growth = append(s.res.Growth, g)
		prev = target
	}
	return nil
}

// createObjects creates, in each namespace, the guarded ServiceAccount, the
// ConfigMaps and the pods, then the big namespace's ConfigMaps.
func (s *scaler) createObjects(ctx context.Context, names []string) error {
	o := s.opts
	logf("  %d ServiceAccounts", o.namespaces)
	if err := parallel(ctx, o.driverWorkers, o.namespaces, func(ctx context.Context, i int) error {
		return s.createUser(ctx, names[i])
	}); err != nil {
		return err
	}
	logf("  %d ConfigMaps", o.namespaces*o.objectsPerNs)
	if err := parallel(ctx, o.driverWorkers, o.namespaces*o.objectsPerNs, func(ctx context.Context, i int) error {
		return s.createConfigMap(ctx, names[i%o.namespaces], fmt.Sprintf("cm-%05d", i/o.namespaces))
	}); err != nil {
		return err
	}
	logf("  %d pods", o.pods)
	if err := parallel(ctx, o.driverWorkers, o.pods, func(ctx context.Context, i int) error {
		return s.createPod(ctx, names[i%o.namespaces], fmt.Sprintf("pod-%05d", i/o.namespaces))
	}); err != nil {
		return err
	}
	logf("  %d ConfigMaps in %s", o.bigNsObjects, bigNs)
	return parallel(ctx, o.driverWorkers, o.bigNsObjects, func(ctx context.Context, i int) error {
		return s.createConfigMap(ctx, bigNs, fmt.Sprintf("cm-%05d", i))
	})
}

// coldStart starts the controller with everything in place and measures
// until every guarded object carries its key, then the passes, the attach
// latency, the drain and the diagnosis with that controller.
func (s *scaler) coldStart(ctx context.Context, cms, sas *tracker) error {
	o := s.opts
	wantCM, wantSA := o.namespaces*o.objectsPerNs+o.bigNsObjects, o.namespaces
	logf("cold start: the controller with %d policies and %d guarded objects in place", o.namespaces+2, wantCM+wantSA)
	t0 := time.Now()
	c, err := s.startController("cold-start")
	if err != nil {
		return err
	}
	defer c.stop()
	err = waitFor(ctx, time.Second, o.attachTimeout, "every guarded object to carry its key", func() (bool, string) {
		if err := c.exited(); err != nil {
			return false, err.Error()
		}
		a, _ := cms.counts()
		b, _ := sas.counts()
		return a >= wantCM && b >= wantSA, fmt.Sprintf("%d of %d ConfigMaps, %d of %d ServiceAccounts", a, wantCM, b, wantSA)
	})
	if err != nil {
		return err
	}
	last := cms.last()
	if l := sas.last(); l.After(last) {
		last = l
	}
	cs := &scale.ColdStart{Phase: scale.Phase{Objects: wantCM + wantSA, Seconds: last.Sub(t0).Seconds()}, CPUSeconds: c.cpu()}
	logf("  all attached %.1fs after the start (%.0f/s), controller CPU %.1fs", cs.Seconds, cs.Rate(), cs.CPUSeconds)
	logf("  settling 30s before reading memory")
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
	}
	if cs.RSS, cs.PeakRSS, err = c.memory(); err != nil {
		return err
	}
	if cs.HeapInuse, err = c.heapInuse(ctx); err != nil {
		return err
	}
	s.res.ColdStart = cs
	logf("  RSS %.0f MiB (peak %.0f MiB), HeapInuse %.0f MiB", float64(cs.RSS)/(1<<20), float64(cs.PeakRSS)/(1<<20), float64(cs.HeapInuse)/(1<<20))
	s.write() //nolint:errcheck // a partial record; the final write reports errors

	if o.attachOnly {
		if err := s.attachUnderLoad(ctx, c, cms); err != nil {
			s.fail("attach under load", err)
		}
		return nil
	}
	if p, err := s.passCost(ctx, c, "status", statusFocus, o.statusInterval, wantCM+wantSA); err != nil {
		s.fail("status pass", err)
	} else {
		s.res.Status = p
	}
	if err := s.attachUnderLoad(ctx, c, cms); err != nil {
		s.fail("attach under load", err)
	}
	if err := s.drain(ctx); err != nil {
		s.fail("namespace drain", err)
	}
	if err := s.diagnosis(ctx, c); err != nil {
		s.fail("diagnosis pass", err)
	}
	return nil
}

// passCost profiles the controller over three intervals and returns the
// CPU spent under focus.
func (s *scaler) passCost(ctx context.Context, c *controllerProc, name, focus string, interval time.Duration, objects int) (*scale.PassCost, error) {
	window := 3 * interval
	logf("%s pass: CPU profile of %s", name, window)
	focused, total, err := c.focusedCPU(ctx, window, focus, filepath.Join(s.out, "profiles", name+".pprof"))
	if err != nil {
		return nil, err
	}
	p := &scale.PassCost{Function: focus, WindowSeconds: window.Seconds(), Interval: interval.String(), Passes: 3,
		CPUSeconds: focused, ProfileTotal: total, Objects: objects}
	logf("  %.3fs CPU under %s of %.2fs in the window: %.1f ms per pass", focused, focus, total, 1000*p.PerPass())
	return p, nil
}

// drain deletes the big namespace and measures until it is gone.
func (s *scaler) drain(ctx context.Context) error {
	logf("namespace drain: deleting %s (%d guarded ConfigMaps)", bigNs, s.opts.bigNsObjects)
	before, err := apimetrics.Scrape(ctx, s.kube.Discovery().RESTClient())
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := s.kube.CoreV1().Namespaces().Delete(ctx, bigNs, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := waitFor(ctx, 100*time.Millisecond, 20*time.Minute, bigNs+" to be gone", func() (bool, string) {
		ok, err := s.exists(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bigNs}})
		return !ok && err == nil, fmt.Sprint("still there ", err)
	}); err != nil {
		return err
	}
	seconds := time.Since(t0).Seconds()
	after, err := apimetrics.Scrape(ctx, s.kube.Discovery().RESTClient())
	if err != nil {
		return err
	}
	d := after.Sub(before)
	s.res.Drain = &scale.Drain{Objects: s.opts.bigNsObjects, Seconds: seconds, Writes: d.Writes(), Reads: d.Reads(),
		Requests: d.Count(func(k apimetrics.Key) bool { return !strings.HasPrefix(k.Verb, "etcd:") })}
	logf("  gone after %.1fs; %.0f API requests; writes: %s", seconds, s.res.Drain.Requests, d)
	return nil
}

// diagnosis deletes every guarded ServiceAccount, which its pods keep in
// use (the unused step waits), waits until they are due for diagnosis and
// profiles the diagnosis passes.
func (s *scaler) diagnosis(ctx context.Context, c *controllerProc) error {
	o := s.opts
	logf("diagnosis: deleting %d guarded ServiceAccounts still used by their pods", o.namespaces)
	if err := parallel(ctx, o.driverWorkers, o.namespaces, func(ctx context.Context, i int) error {
		err := s.kube.CoreV1().ServiceAccounts(nsName(i)).Delete(ctx, userSA, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ServiceAccount %s/%s went at once: its key was not on it", nsName(i), userSA)
		}
		return err
	}); err != nil {
		return err
	}
	var blocked float64
	if err := waitFor(ctx, time.Second, o.diagnoseAfter+5*time.Minute, "the ServiceAccounts to be diagnosed", func() (bool, string) {
		var err error
		blocked, err = c.metric(ctx, "teardown_blocked_objects", nil)
		if err != nil {
			return false, err.Error()
		}
		return int(blocked) >= o.namespaces, fmt.Sprintf("teardown_blocked_objects %.0f", blocked)
	}); err != nil {
		return err
	}
	p, err := s.passCost(ctx, c, "diagnosis", diagnosisFocus, o.diagnoseInterval, int(blocked))
	if err != nil {
		return err
	}
	s.res.Diagnosis = p
	return nil
}

// write writes results.json and results.md, and prints the markdown.
func (s *scaler) write() error {
	data, err := json.MarshalIndent(s.res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.out, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(s.out, "results.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	scale.Markdown(f, s.res)
	return nil
}
