/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/teardown-dev/teardown/bench/apimetrics"
	"github.com/teardown-dev/teardown/bench/scale"
)

// attachQueue is the controller whose queue an object waits in until its
// key is attached (internal/guarded).
const attachQueue = "target-attach"

// attachUnderLoad measures the attach latency of ConfigMaps created into
// the full cluster: first -paced-objects one at a time (nothing queues:
// what one object waits), then -attach-objects at full rate.
func (s *scaler) attachUnderLoad(ctx context.Context, c *controllerProc, cms *tracker) error {
	o := s.opts
	if o.pacedObjects > 0 {
		logf("attach, paced: %d ConfigMaps, one every %s", o.pacedObjects, o.pace)
		a, err := s.attachLatency(ctx, c, cms, "paced", o.pacedObjects, 1, o.pace)
		if err != nil {
			return err
		}
		s.res.AttachPaced = a
	}
	logf("attach under load: %d ConfigMaps at full rate", o.attachObjects)
	a, err := s.attachLatency(ctx, c, cms, "load", o.attachObjects, o.driverWorkers, 0)
	if err != nil {
		return err
	}
	a.Via = "the controller's watch (the attach-at-create webhook is not wired in this benchmark)"
	s.res.Attach = a
	return nil
}

// attachLatency creates n ConfigMaps across the first namespaces on workers
// goroutines, each create at least pace after the one before, and measures
// each from its create's answer to its key seen on the tracking watch, in
// parts: the create itself, the answer to the object's first sight on the
// tracking watch (the API server's watch delivery, which the controller's
// watch waits for as well), and that sight to the key's (the controller's
// watch, queue, reconcile and PATCH, and the delivery of that change).
// The controller's queue metrics over the same time say how much of the
// last part is its queue and its reconcile.
func (s *scaler) attachLatency(ctx context.Context, c *controllerProc, cms *tracker, prefix string, n, workers int, pace time.Duration) (*scale.Latency, error) {
	spread := min(20, s.opts.namespaces)
	key := func(i int) string { return fmt.Sprintf("%s/%s-%05d", nsName(i%spread), prefix, i/spread) }
	sent, answered := make([]time.Time, n), make([]time.Time, n)
	before, err := c.queueCounters(ctx)
	if err != nil {
		return nil, err
	}
	serverBefore, err := s.serverTimes(ctx)
	if err != nil {
		return nil, err
	}
	depth := c.sampleDepth(ctx, 100*time.Millisecond)
	profiled := make(chan error, 1)
	if s.opts.attachProfile > 0 {
		go func() {
			profiled <- c.profile(ctx, s.opts.attachProfile, filepath.Join(s.out, "profiles", "attach-"+prefix+".pprof"))
		}()
	} else {
		profiled <- nil
	}
	cpu0, t0 := c.cpu(), time.Now()
	err = parallel(ctx, workers, n, func(ctx context.Context, i int) error {
		if pace > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Until(t0.Add(time.Duration(i) * pace))):
			}
		}
		ns, name, _ := strings.Cut(key(i), "/")
		sent[i] = time.Now()
		err := s.createConfigMap(ctx, ns, name)
		answered[i] = time.Now()
		return err
	})
	createSeconds := time.Since(t0).Seconds()
	if err != nil {
		depth.stop()
		return nil, err
	}
	var total, create, delivery, controller []float64
	err = waitFor(ctx, 200*time.Millisecond, 5*time.Minute, "the new ConfigMaps to carry their key", func() (bool, string) {
		total, create, delivery, controller = total[:0], create[:0], delivery[:0], controller[:0]
		for i := range n {
			seen, at, ok := cms.attachedAt(key(i))
			if !ok {
				continue
			}
			total = append(total, max(0, at.Sub(answered[i]).Seconds()))
			create = append(create, answered[i].Sub(sent[i]).Seconds())
			delivery = append(delivery, seen.Sub(answered[i]).Seconds())
			controller = append(controller, at.Sub(seen).Seconds())
		}
		return len(total) == n, fmt.Sprintf("%d of %d", len(total), n)
	})
	cpu, seconds := c.cpu()-cpu0, time.Since(t0).Seconds()
	maxDepth, samples := depth.stop()
	if err != nil {
		return nil, err
	}
	if err := <-profiled; err != nil {
		return nil, fmt.Errorf("profiling the controller over the burst: %w", err)
	}
	after, err := c.queueCounters(ctx)
	if err != nil {
		return nil, err
	}
	q := after.Sub(before)
	q.MaxDepth, q.Samples = maxDepth, samples
	serverAfter, err := s.serverTimes(ctx)
	if err != nil {
		return nil, err
	}
	server := serverAfter.Sub(serverBefore)
	if err := s.writeTimes(prefix, n, key, sent, answered, cms); err != nil {
		return nil, err
	}
	a := &scale.Latency{Objects: n, Rate: float64(n) / createSeconds,
		P50: scale.Percentile(total, 50), P99: scale.Percentile(total, 99), Max: scale.Percentile(total, 100),
		Parts: []scale.Part{
			scale.PartOf("the create (sent to answered)", create),
			scale.PartOf("answered to first seen on the benchmark's watch (API server watch delivery)", delivery),
			scale.PartOf("first seen to key seen (controller's watch, queue, reconcile, PATCH, and that change's delivery)", controller),
		},
		Queue: &q, Server: &server, ControllerCPU: cpu, Seconds: seconds}
	logf("  created at %.1f/s; create to key seen p50 %.1f ms, p99 %.1f ms, max %.1f ms", a.Rate, 1000*a.P50, 1000*a.P99, 1000*a.Max)
	for _, p := range a.Parts {
		logf("    %s: p50 %.1f ms, p99 %.1f ms, max %.1f ms", p.Name, 1000*p.P50, 1000*p.P99, 1000*p.Max)
	}
	logf("    %s queue: %.0f adds, %.0f gets, mean wait %.1f ms, %.0f reconciles, mean %.1f ms, depth at most %.0f",
		attachQueue, q.Adds, q.Gets, 1000*q.MeanWait(), q.Reconciles, 1000*q.MeanReconcile(), q.MaxDepth)
	logf("    reconciles at most %v s: %v", scale.ReconcileBounds, q.ReconcilesUnder)
	logf("    controller CPU %.2fs in %.1fs", cpu, seconds)
	logf("    API server: %.0f ConfigMap creates, mean %.1f ms; %.0f PATCHes, mean %.1f ms",
		server.Creates, 1000*server.MeanCreate(), server.Patches, 1000*server.MeanPatch())
	return a, nil
}

// serverTimes reads the API server's count and duration of ConfigMap
// creates and PATCHes.
func (s *scaler) serverTimes(ctx context.Context) (scale.ServerTimes, error) {
	data, err := s.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return scale.ServerTimes{}, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	var t scale.ServerTimes
	for _, m := range []struct {
		metric, verb string
		into         *float64
	}{
		{"apiserver_request_duration_seconds_count", "POST", &t.Creates},
		{"apiserver_request_duration_seconds_sum", "POST", &t.CreateSeconds},
		{"apiserver_request_duration_seconds_count", "PATCH", &t.Patches},
		{"apiserver_request_duration_seconds_sum", "PATCH", &t.PatchSeconds},
	} {
		v, _, err := apimetrics.Sum(data, m.metric, map[string]string{"verb": m.verb, "resource": "configmaps", "subresource": ""})
		if err != nil {
			return scale.ServerTimes{}, err
		}
		*m.into = v
	}
	return t, nil
}

// writeTimes writes each object's times, in seconds from the first send,
// to attach-<prefix>.csv in the output folder: the shape of a latency
// (a queue that grows through the burst, or a delay every object pays)
// is in them, not in its percentiles.
func (s *scaler) writeTimes(prefix string, n int, key func(int) string, sent, answered []time.Time, cms *tracker) error {
	var b strings.Builder
	b.WriteString("object,sent,answered,seen,attached\n")
	t0 := slices.MinFunc(sent, time.Time.Compare)
	for i := range n {
		seen, at, _ := cms.attachedAt(key(i))
		fmt.Fprintf(&b, "%s,%.4f,%.4f,%.4f,%.4f\n", key(i), sent[i].Sub(t0).Seconds(), answered[i].Sub(t0).Seconds(), seen.Sub(t0).Seconds(), at.Sub(t0).Seconds())
	}
	return os.WriteFile(filepath.Join(s.out, "attach-"+prefix+".csv"), []byte(b.String()), 0o644)
}

// profile records a CPU profile of the controller over window into path.
func (c *controllerProc) profile(ctx context.Context, window time.Duration, path string) error {
	data, err := c.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(window.Seconds())))
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// queueCounters reads the attach queue's counters and histogram sums.
func (c *controllerProc) queueCounters(ctx context.Context) (scale.Queue, error) {
	data, err := c.get(ctx, "/metrics")
	if err != nil {
		return scale.Queue{}, err
	}
	byName, byController := map[string]string{"name": attachQueue}, map[string]string{"controller": attachQueue}
	var q scale.Queue
	for _, m := range []struct {
		metric string
		match  map[string]string
		into   *float64
	}{
		{"workqueue_adds_total", byName, &q.Adds},
		{"workqueue_queue_duration_seconds_count", byName, &q.Gets},
		{"workqueue_queue_duration_seconds_sum", byName, &q.WaitSeconds},
		{"controller_runtime_reconcile_time_seconds_count", byController, &q.Reconciles},
		{"controller_runtime_reconcile_time_seconds_sum", byController, &q.ReconcileSeconds},
	} {
		v, found, err := apimetrics.Sum(data, m.metric, m.match)
		if err != nil {
			return scale.Queue{}, err
		}
		if !found {
			return scale.Queue{}, fmt.Errorf("the controller's /metrics has no %s for %s", m.metric, attachQueue)
		}
		*m.into = v
	}
	for _, le := range scale.ReconcileBounds {
		v, _, err := apimetrics.Sum(data, "controller_runtime_reconcile_time_seconds_bucket", map[string]string{"controller": attachQueue, "le": le})
		if err != nil {
			return scale.Queue{}, err
		}
		q.ReconcilesUnder = append(q.ReconcilesUnder, v)
	}
	return q, nil
}

func (c *controllerProc) sampleDepth(ctx context.Context, every time.Duration) *depthSampler {
	ctx, cancel := context.WithCancel(ctx)
	d := &depthSampler{cancel: cancel}
	d.wg.Go(func() {
		for {
			if v, err := c.metric(ctx, "workqueue_depth", map[string]string{"name": attachQueue}); err == nil {
				d.max = max(d.max, v)
				d.samples++
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	})
	return d
}

// depthSampler reads the attach queue's depth (every priority) until
// stopped.
type depthSampler struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	max     float64
	samples int
}

func (d *depthSampler) stop() (maxDepth float64, samples int) {
	d.cancel()
	d.wg.Wait()
	return d.max, d.samples
}
