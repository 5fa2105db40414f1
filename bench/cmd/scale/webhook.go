/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/bench/apimetrics"
	"github.com/teardown-dev/teardown/bench/scale"
	"github.com/teardown-dev/teardown/internal/admit"
)

// webhookFlags are the attach webhook phase's flags (main.go registers
// them): -webhook-objects and -webhook-only.
var webhookFlags struct {
	objects int
	only    bool
}

// The benchmark's controller creates this MutatingWebhookConfiguration
// with --attach-webhook (bench/cmd/teardown/webhook.go). Objects labelled
// webhookOffLabel=off are skipped by it (an objectSelector the benchmark
// adds), which gives the burst without the webhook the same cluster, the
// same controller and the same API server configuration.
const (
	webhookConfig   = "teardown-attach-finalizers"
	webhookOffLabel = "scale-webhook"
	// The API server's metrics of a webhook call.
	webhookDuration = "apiserver_admission_webhook_admission_duration_seconds"
	// handleFocus is the webhook's handler in a profile.
	handleFocus = `admit\.\(\*Attacher\)\.Handle$`
)

// attachWebhook measures the attach-at-create webhook: with a controller
// serving it (and attaching everything already there), a burst of
// -webhook-objects ConfigMaps the webhook skips, then the same burst
// through it, each at full rate from the driver's workers. The webhook's
// latency is what the API server measured of its calls; the driver's
// CREATE times of the two bursts say what it adds to a create.
func (s *scaler) attachWebhook(ctx context.Context, cms, sas *tracker) error {
	o, n := s.opts, webhookFlags.objects
	logf("attach webhook: a controller serving it (MutatingWebhookConfiguration %s)", webhookConfig)
	// startController passes opts.controllerArgs; this one controller also
	// serves the webhook.
	saved := s.opts.controllerArgs
	s.opts.controllerArgs = append(slices.Clip(saved), "--attach-webhook="+webhookConfig)
	c, err := s.startController("webhook")
	s.opts.controllerArgs = saved
	if err != nil {
		return err
	}
	defer c.stop()
	if err := s.skipLabelled(ctx); err != nil {
		return err
	}
	if err := s.webhookReady(ctx, c, cms, sas); err != nil {
		return err
	}
	guarded, err := s.countGuarded(ctx)
	if err != nil {
		return err
	}
	w := &scale.WebhookLatency{Webhook: admit.NamespacedWebhookName, Objects: n, Workers: o.driverWorkers, Guarded: guarded}

	logf("  %d ConfigMaps at full rate the webhook skips (%s=off)", n, webhookOffLabel)
	before, err := s.webhookMetrics(ctx, c)
	if err != nil {
		return err
	}
	off, err := s.webhookBurst(ctx, "wh-off", n, true)
	if err != nil {
		return err
	}
	mid, err := s.webhookMetrics(ctx, c)
	if err != nil {
		return err
	}
	// A CPU profile of the controller over the burst through the webhook
	// (four times the first burst's length, which the webhook slows):
	// what the handler spends its time on.
	window := time.Duration(min(60, max(5, math.Ceil(4*off.finish.Sub(off.started).Seconds())))) * time.Second
	type profiled struct{ focused, total float64 }
	prof := make(chan profiled, 1)
	go func() {
		focused, total, err := c.focusedCPU(ctx, window, handleFocus, filepath.Join(s.out, "profiles", "webhook.pprof"))
		if err != nil {
			logf("  profiling the webhook burst: %v", err)
		}
		prof <- profiled{focused, total}
	}()
	logf("  the same %d through the webhook (CPU profile of %s)", n, window)
	on, err := s.webhookBurst(ctx, "wh-on", n, false)
	if err != nil {
		return err
	}
	p := <-prof
	w.ProfileSeconds, w.HandleCPU, w.ProfileCPU = window.Seconds(), p.focused, p.total
	after, err := s.webhookMetrics(ctx, c)
	if err != nil {
		return err
	}
	w.Without, w.RateWithout, w.CarriedWithout = off.create(), off.rate(), off.carried()
	w.With, w.RateWith, w.CarriedKey = on.create(), on.rate(), on.carried()
	w.CallsWithout = mid.calls() - before.calls()
	hist := apimetrics.SubBuckets(after.buckets, mid.buckets)
	w.Calls = after.calls() - mid.calls()
	w.P50, w.P99 = finite(apimetrics.Quantile(hist, 0.5)), finite(apimetrics.Quantile(hist, 0.99))
	w.Mean = ratio(after.sum-mid.sum, w.Calls)
	w.Buckets = map[string]float64{}
	for _, b := range hist {
		w.Buckets[fmt.Sprint(b.LE)] = b.Count
	}
	w.Requests = map[string]float64{"200": after.ok - mid.ok, "other": (after.requests - mid.requests) - (after.ok - mid.ok)}
	w.Rejections, w.FailOpen = after.rejections-mid.rejections, after.failOpen-mid.failOpen
	w.HandlerCalls = after.handlerCount - mid.handlerCount
	w.HandlerMean = ratio(after.handlerSum-mid.handlerSum, w.HandlerCalls)
	s.res.Webhook = w
	logf("  webhook (API server): %.0f calls, p50 %.1f ms, p99 %.1f ms (interpolated within buckets), mean %.1f ms; handler mean %.2f ms over %.0f",
		w.Calls, 1000*w.P50, 1000*w.P99, 1000*w.Mean, 1000*w.HandlerMean, w.HandlerCalls)
	logf("  CREATE with: %.0f/s, p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d of %d carried the key", w.RateWith, 1000*w.With.P50, 1000*w.With.P99, 1000*w.With.Max, w.CarriedKey, n)
	logf("  CREATE without: %.0f/s, p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d carried a key, %.0f webhook calls", w.RateWithout, 1000*w.Without.P50, 1000*w.Without.P99, 1000*w.Without.Max, w.CarriedWithout, w.CallsWithout)
	logf("  controller CPU in %.0fs: %.2fs, of which %.2fs under %s (%.2f ms per call)", w.ProfileSeconds, w.ProfileCPU, w.HandleCPU, handleFocus, 1000*ratio(w.HandleCPU, w.Calls))
	logf("  rejections %.0f, failed open %.0f, calls by code %v", w.Rejections, w.FailOpen, w.Requests)
	return writeWebhookTimes(filepath.Join(s.out, "webhook.csv"), off, on)
}

// skipLabelled adds to both webhooks of the configuration an objectSelector
// that skips objects labelled webhookOffLabel=off. The controller keeps
// only the rules and its namespace requirement (admit.SyncRules), so the
// selector stays; a JSON patch of the two webhooks by index needs no
// resourceVersion, and the controller's own updates retry on conflict.
func (s *scaler) skipLabelled(ctx context.Context) error {
	sel := `{"matchExpressions":[{"key":"` + webhookOffLabel + `","operator":"NotIn","values":["off"]}]}`
	patch := `[{"op":"test","path":"/webhooks/0/name","value":"` + admit.WebhookName + `"},` +
		`{"op":"test","path":"/webhooks/1/name","value":"` + admit.NamespacedWebhookName + `"},` +
		`{"op":"add","path":"/webhooks/0/objectSelector","value":` + sel + `},` +
		`{"op":"add","path":"/webhooks/1/objectSelector","value":` + sel + `}]`
	_, err := s.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, webhookConfig, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("adding the objectSelector to %s: %w", webhookConfig, err)
	}
	return nil
}

// webhookReady waits until every guarded object carries its key (the
// controller's cold start, when this phase is the only one), a canary
// ConfigMap's CREATE answer carries its key (the webhook is served and the
// controller has put its rules in the configuration), and the attach
// queue has stayed empty for 10 s, so that the bursts meet an idle
// controller.
func (s *scaler) webhookReady(ctx context.Context, c *controllerProc, cms, sas *tracker) error {
	o := s.opts
	wantCM, wantSA := o.namespaces*o.objectsPerNs, o.namespaces
	if err := waitFor(ctx, time.Second, o.attachTimeout, "every guarded object to carry its key", func() (bool, string) {
		if err := c.exited(); err != nil {
			return false, err.Error()
		}
		a, _ := cms.counts()
		b, _ := sas.counts()
		return a >= wantCM && b >= wantSA, fmt.Sprintf("%d of %d ConfigMaps, %d of %d ServiceAccounts", a, wantCM, b, wantSA)
	}); err != nil {
		return err
	}
	canary := 0
	if err := waitFor(ctx, time.Second, 5*time.Minute, "a CREATE answer to carry its key", func() (bool, string) {
		if err := c.exited(); err != nil {
			return false, err.Error()
		}
		canary++
		carried, err := s.createThroughWebhook(ctx, nsName(0), fmt.Sprintf("wh-canary-%03d", canary), false)
		if err != nil {
			return false, err.Error()
		}
		return carried, fmt.Sprintf("%d canaries without", canary)
	}); err != nil {
		return err
	}
	logf("  the webhook attached at create after %d canaries; waiting for an idle attach queue", canary)
	idle := 0
	return waitFor(ctx, time.Second, o.attachTimeout, "the attach queue to stay empty for 10s", func() (bool, string) {
		depth, err := c.metric(ctx, "workqueue_depth", map[string]string{"name": attachQueue})
		if err != nil {
			return false, err.Error()
		}
		if depth > 0 {
			idle = 0
		} else {
			idle++
		}
		return idle >= 10, fmt.Sprintf("depth %.0f", depth)
	})
}

// countGuarded counts the guarded ConfigMaps in the cluster.
func (s *scaler) countGuarded(ctx context.Context) (int, error) {
	n, opts := 0, metav1.ListOptions{LabelSelector: scaleLabel + "=" + cmValue, Limit: 5000}
	for {
		list, err := s.meta.Resource(configMaps).List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("listing ConfigMaps: %w", err)
		}
		n += len(list.Items)
		if opts.Continue = list.Continue; opts.Continue == "" {
			return n, nil
		}
	}
}

// createThroughWebhook creates a guarded ConfigMap, labelled to be skipped
// by the webhook when off, and reports whether the API server's answer
// carried its policy's key.
func (s *scaler) createThroughWebhook(ctx context.Context, ns, name string, off bool) (bool, error) {
	labels := map[string]string{scaleLabel: cmValue}
	if off {
		labels[webhookOffLabel] = "off"
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: map[string]string{"k": "v"}}
	got, err := s.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("creating ConfigMap %s/%s: %w", ns, name, err)
	}
	return err == nil && slices.Contains(got.Finalizers, policyKey(ns)), nil
}

// burst is one burst's objects and times.
type burst struct {
	off             bool
	keys            []string
	sent, answered  []time.Time
	carriedKey      []bool
	started, finish time.Time
}

// webhookBurst creates n ConfigMaps across the first namespaces (as the
// attach phase does) on the driver's workers at full rate.
func (s *scaler) webhookBurst(ctx context.Context, prefix string, n int, off bool) (*burst, error) {
	spread := min(20, s.opts.namespaces)
	b := &burst{off: off, keys: make([]string, n), sent: make([]time.Time, n), answered: make([]time.Time, n), carriedKey: make([]bool, n)}
	b.started = time.Now()
	err := parallel(ctx, s.opts.driverWorkers, n, func(ctx context.Context, i int) error {
		ns, name := nsName(i%spread), fmt.Sprintf("%s-%05d", prefix, i/spread)
		b.keys[i] = ns + "/" + name
		b.sent[i] = time.Now()
		carried, err := s.createThroughWebhook(ctx, ns, name, off)
		b.answered[i], b.carriedKey[i] = time.Now(), carried
		return err
	})
	b.finish = time.Now()
	return b, err
}

func (b *burst) create() scale.Part {
	d := make([]float64, len(b.sent))
	for i := range d {
		d[i] = b.answered[i].Sub(b.sent[i]).Seconds()
	}
	return scale.PartOf("CREATE", d)
}

func (b *burst) rate() float64 { return ratio(float64(len(b.sent)), b.finish.Sub(b.started).Seconds()) }

func (b *burst) carried() int {
	n := 0
	for _, c := range b.carriedKey {
		if c {
			n++
		}
	}
	return n
}

// writeWebhookTimes writes each object's CREATE times, in seconds from the
// first burst's start, and whether its answer carried the key: whether
// the webhook's cost grows through a burst is in them.
func writeWebhookTimes(path string, bursts ...*burst) error {
	var sb strings.Builder
	sb.WriteString("object,webhook,sent,answered,carried\n")
	t0 := bursts[0].started
	for _, b := range bursts {
		for i, k := range b.keys {
			fmt.Fprintf(&sb, "%s,%t,%.4f,%.4f,%t\n", k, !b.off, b.sent[i].Sub(t0).Seconds(), b.answered[i].Sub(t0).Seconds(), b.carriedKey[i])
		}
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// webhookReading is the API server's metrics of the webhook's calls and
// the controller's of its handler, at one moment.
type webhookReading struct {
	buckets                                 []apimetrics.Bucket
	sum, requests, ok, rejections, failOpen float64
	handlerCount, handlerSum                float64
}

func (r webhookReading) calls() float64 {
	if len(r.buckets) == 0 {
		return 0
	}
	return r.buckets[len(r.buckets)-1].Count
}

func (s *scaler) webhookMetrics(ctx context.Context, c *controllerProc) (webhookReading, error) {
	data, err := s.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return webhookReading{}, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	name := map[string]string{"name": admit.NamespacedWebhookName}
	var r webhookReading
	if r.buckets, err = apimetrics.Buckets(data, webhookDuration, name); err != nil {
		return r, err
	}
	for _, m := range []struct {
		metric string
		match  map[string]string
		into   *float64
	}{
		{webhookDuration + "_sum", name, &r.sum},
		{"apiserver_admission_webhook_request_total", name, &r.requests},
		{"apiserver_admission_webhook_request_total", map[string]string{"name": admit.NamespacedWebhookName, "code": "200"}, &r.ok},
		{"apiserver_admission_webhook_rejection_count", name, &r.rejections},
		{"apiserver_admission_webhook_fail_open_count", name, &r.failOpen},
	} {
		if *m.into, _, err = apimetrics.Sum(data, m.metric, m.match); err != nil {
			return r, err
		}
	}
	path := map[string]string{"webhook": admit.Path}
	if r.handlerCount, err = c.metric(ctx, "controller_runtime_webhook_latency_seconds_count", path); err != nil {
		return r, err
	}
	if r.handlerSum, err = c.metric(ctx, "controller_runtime_webhook_latency_seconds_sum", path); err != nil {
		return r, err
	}
	return r, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// finite keeps NaN (no observation) out of results.json, which cannot
// hold it; the table says n/a when there was no call.
func finite(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
