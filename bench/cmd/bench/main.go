/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command bench measures, in one run on a local control plane, how fast
// objects guarded by a finalizer are deleted: the API server's raw limit, the
// teardown-controller (a policy with no steps, one with a webhook step, one
// with a Declared key) and a kubebuilder-book controller as generated and
// tuned; API writes per object from the API server's own metrics; and the
// marginal memory per guarded object of Teardown and of the baseline. It
// prints a markdown table with PASS or MISS per target of the benchmark
// issue, and writes results.json, results.md and chart.png.
//
//	make bench                              # N=1,000 and N=10,000, 20,000 objects for memory
//	go run ./bench/cmd/bench -quick         # N=200, 2,000 objects for memory
//	go run ./bench/cmd/bench -n 1000 -scenarios raw-limit,teardown -rss=false -profile
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/bench/report"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

type options struct {
	ns              []int
	scenarios       []string
	dataBytes       int
	driverWorkers   int
	rawConcurrency  []int
	rawWrite        string
	teardownWorkers int
	tunedWorkers    int
	tunedQPS        int
	rss             bool
	rssObjects      int
	rssDataBytes    int
	rssSettle       time.Duration
	profile         bool
	out             string
	failOnMiss      bool
	childEnv        []string
	teardownArgs    []string
	rssControllers  []string
	rssBefore       string
	runs            int
	waitOptions
}

func main() {
	var o options
	var ns, scenarios, rawConcurrency, childEnv string
	quick := flag.Bool("quick", false, "Development mode: N=200, raw concurrency 16,32, 2,000 objects for memory, 5s settle.")
	flag.StringVar(&ns, "n", "1000,10000", "Comma-separated numbers of objects deleted at once.")
	flag.StringVar(&scenarios, "scenarios", strings.Join(report.Scenarios, ","), "Comma-separated scenarios to run; empty for none (memory only).")
	flag.IntVar(&o.dataBytes, "data-bytes", 0, "Bytes of data in each ConfigMap of the throughput runs.")
	flag.IntVar(&o.driverWorkers, "driver-workers", 32, "Goroutines that create and delete the objects.")
	flag.StringVar(&rawConcurrency, "raw-concurrency", "8,16,32,64", "Concurrencies the raw client tries; the best is kept.")
	flag.StringVar(&o.rawWrite, "raw-write", rawStrategic, "How the raw client removes the finalizer: "+rawStrategic+" (what the library sends to a built-in kind being deleted: the entry deleted by value, uid and resourceVersion pinned) "+rawJSONPatch+" (its guarded JSON patch: uid and entry tested) or "+rawMerge+" (the whole list replaced, uid pinned), to measure what the API server spends on each.")
	flag.IntVar(&o.teardownWorkers, "teardown-workers", controller.DefaultOptions().TargetWorkers, "teardown-controller --target-workers.")
	flag.IntVar(&o.tunedWorkers, "tuned-workers", 0, "Workers of the tuned baseline; 0 is the same as -teardown-workers.")
	flag.IntVar(&o.tunedQPS, "tuned-qps", 1000, "Client QPS of the tuned baseline (burst is twice that).")
	flag.IntVar(&o.runs, "runs", 1, "Rounds of every throughput measurement, interleaved; the median round of each is reported.")
	flag.BoolVar(&o.rss, "rss", true, "Measure marginal RSS per guarded object.")
	rssControllers := flag.String("rss-controllers", report.Teardown+","+report.BaselineTuned, "Controllers whose memory is measured.")
	flag.IntVar(&o.rssObjects, "rss-objects", 20000, "Guarded ConfigMaps for the memory measurement.")
	flag.IntVar(&o.rssDataBytes, "rss-data-bytes", 4096, "Bytes of data in each ConfigMap of the memory measurement.")
	flag.DurationVar(&o.rssSettle, "rss-settle", 15*time.Second, "Idle time before RSS is read.")
	flag.StringVar(&o.rssBefore, "rss-before", "", "A checkout of an earlier commit (git worktree add DIR COMMIT) whose teardown-controller is measured too, as "+report.TeardownBefore+", for a before/after of memory in one run.")
	flag.BoolVar(&o.profile, "profile", false, "Record a CPU profile of each controller's delete phase into <out>/profiles.")
	flag.StringVar(&o.out, "out", "_out/bench", "Folder for results, logs and profiles.")
	flag.BoolVar(&o.failOnMiss, "fail-on-miss", true, "Exit 1 when a target is missed.")
	teardownArgs := flag.String("teardown-args", "", "Comma-separated extra flags of the teardown controller, for experiments (--target-workers=32).")
	flag.StringVar(&childEnv, "child-env", "", "Comma-separated KEY=VALUE added to the controllers' environment, for experiments (GOGC=50, GODEBUG=memprofilerate=1).")
	finishWaitFlags := bindWaitFlags(&o.waitOptions)
	flag.Parse()
	if err := finishWaitFlags(*quick); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *quick {
		ns, rawConcurrency = "200", "16,32"
		o.rssObjects, o.rssSettle = 2000, 5*time.Second
	}
	var err error
	if o.ns, err = ints(ns); err == nil {
		o.rawConcurrency, err = ints(rawConcurrency)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	for _, s := range strings.Split(scenarios, ",") {
		if s == "" {
			continue // -scenarios "": memory only
		}
		if !slices.Contains(report.Scenarios, s) {
			fmt.Fprintf(os.Stderr, "bench: unknown scenario %q (known: %s)\n", s, strings.Join(report.Scenarios, ", "))
			os.Exit(2)
		}
		o.scenarios = append(o.scenarios, s)
	}
	if o.rawWrite != rawJSONPatch && o.rawWrite != rawStrategic && o.rawWrite != rawMerge {
		fmt.Fprintf(os.Stderr, "bench: -raw-write: %q is none of %s, %s, %s\n", o.rawWrite, rawJSONPatch, rawStrategic, rawMerge)
		os.Exit(2)
	}
	o.rssControllers = strings.Split(*rssControllers, ",")
	for _, c := range o.rssControllers {
		if c != report.Teardown && c != report.BaselineTuned {
			fmt.Fprintf(os.Stderr, "bench: -rss-controllers: %q is neither %s nor %s\n", c, report.Teardown, report.BaselineTuned)
			os.Exit(2)
		}
	}
	if *teardownArgs != "" {
		o.teardownArgs = strings.Split(*teardownArgs, ",")
	}
	if childEnv != "" {
		o.childEnv = strings.Split(childEnv, ",")
	}
	if o.tunedWorkers == 0 {
		o.tunedWorkers = o.teardownWorkers
	}
	missed, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if missed && o.failOnMiss {
		fmt.Fprintln(os.Stderr, "bench: a target was missed")
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a list of positive numbers", s)
		}
		out = append(out, v)
	}
	return out, nil
}

type bench struct {
	opts          options
	out, bin      string
	env           *testenv.Env
	kube          kubernetes.Interface
	meta          metadata.Interface
	crc           client.Client
	driverWorkers int
	webhook       *webhookServer
	res           *report.Results
	round         int
}

// nsName makes a namespace name unique to the current round.
func (b *bench) nsName(format string, args ...any) string {
	return fmt.Sprintf(format, args...) + fmt.Sprintf("-r%d", b.round)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(o options) (missed bool, err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := testenv.ModuleRoot()
	if err != nil {
		return false, err
	}
	if err := os.Chdir(root); err != nil {
		return false, err
	}
	b := &bench{opts: o, out: o.out, bin: filepath.Join(o.out, "bin"), driverWorkers: o.driverWorkers}
	if err := os.RemoveAll(filepath.Join(o.out, "env")); err != nil {
		return false, err
	}
	for _, dir := range []string{"logs", "bin", "profiles", "env"} {
		if err := os.MkdirAll(filepath.Join(o.out, dir), 0o755); err != nil {
			return false, err
		}
	}
	b.logf("building the controllers under benchmark into %s", b.bin)
	if err := buildChildren(ctx, b.bin); err != nil {
		return false, err
	}
	if o.rssBefore != "" {
		if err := buildBefore(ctx, o.rssBefore, b.bin); err != nil {
			return false, err
		}
		o.rssControllers = append([]string{report.TeardownBefore}, o.rssControllers...)
	}
	started := time.Now()
	b.res = &report.Results{Started: started.UTC(), Machine: machine(), Settings: report.Settings{
		Ns: o.ns, Runs: max(1, o.runs), DataBytes: o.dataBytes, DriverWorkers: o.driverWorkers, RawConcurrency: o.rawConcurrency,
		TeardownWorkers: o.teardownWorkers, TunedWorkers: o.tunedWorkers, TunedQPS: o.tunedQPS,
		RSSObjects: o.rssObjects, RSSDataBytes: o.rssDataBytes, RSSSettle: o.rssSettle.String(),
		ChildEnv: o.childEnv, TeardownArgs: o.teardownArgs, RSSBefore: describeCheckout(o.rssBefore),
		ClientRateLimitNote: "teardown and baseline-default use ctrl.GetConfigOrDie(), which in controller-runtime v0.24 turns client-side rate limiting off (QPS -1): the settings a kubebuilder-generated main.go and cmd/teardown-controller run with; baseline-tuned sets QPS and burst explicitly and raises MaxConcurrentReconciles",
	}}

	env, err := testenv.Start(testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
		Dir:               filepath.Join(o.out, "env"),
		Log:               os.Stderr,
	})
	if err != nil {
		return false, err
	}
	b.env = env
	defer func() {
		if err := env.Stop(); err != nil {
			b.logf("stopping the control plane: %v", err)
		}
	}()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1 // no client-side limit: the driver must never be the bottleneck
	if b.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return false, err
	}
	if b.meta, err = metadata.NewForConfig(cfg); err != nil {
		return false, err
	}
	scheme, err := controller.NewScheme()
	if err != nil {
		return false, err
	}
	if b.crc, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return false, err
	}
	if v, err := b.kube.Discovery().ServerVersion(); err == nil {
		b.res.Machine.Kubernetes = v.GitVersion
	}
	if b.webhook, err = startWebhook(); err != nil {
		return false, err
	}
	defer b.webhook.close()

	var failed []string
	rawBest := map[int]report.Run{} // N -> the first round's raw limit, with every concurrency tried
	for _, n := range o.ns {
		var rounds []report.Run
		for b.round = 0; b.round < max(1, o.runs); b.round++ {
			for _, sc := range o.scenarios {
				b.logf("%s, N=%d, round %d of %d", sc, n, b.round+1, max(1, o.runs))
				var run report.Run
				switch sc {
				case report.Raw:
					concurrency := o.rawConcurrency
					if first, ok := rawBest[n]; ok {
						concurrency = []int{first.Workers}
					}
					run, err = b.rawLimit(ctx, n, concurrency)
					if err == nil && b.round == 0 {
						rawBest[n] = run
					}
				case report.Teardown, report.TeardownWebhook, report.TeardownDeclared:
					run, err = b.teardownRun(ctx, sc, n)
				case report.BaselineDefault, report.BaselineTuned:
					run, err = b.baselineRun(ctx, sc, n)
				}
				if err != nil {
					if ctx.Err() != nil {
						return false, ctx.Err()
					}
					b.logf("  FAILED: %v", err)
					failed = append(failed, fmt.Sprintf("%s N=%d round %d: %v", sc, n, b.round+1, err))
					continue
				}
				b.logf("  %.0f objects/s over %.2fs, p50 %.3fs, p99 %.3fs, writes/object %.3f attach + %.3f remove, %.0f conflicts; CPU s %v",
					run.Throughput, run.Seconds, run.P50, run.P99, run.AttachWrites, run.RemoveWrites, run.Conflicts, run.CPUSeconds)
				rounds = append(rounds, run)
			}
		}
		for _, sc := range o.scenarios {
			if run, ok := report.Median(rounds, sc); ok {
				if sc == report.Raw {
					run.Tried = rawBest[n].Tried
				}
				b.res.Runs = append(b.res.Runs, run)
			}
		}
	}
	if o.rss {
		for _, c := range o.rssControllers {
			b.logf("memory: %s with none and with %d guarded ConfigMaps of %d B", c, o.rssObjects, o.rssDataBytes)
			m, err := b.rss(ctx, c)
			if err != nil {
				if ctx.Err() != nil {
					return false, ctx.Err()
				}
				b.logf("  FAILED: %v", err)
				failed = append(failed, fmt.Sprintf("memory of %s: %v", c, err))
				continue
			}
			b.res.RSS = append(b.res.RSS, m)
		}
	}
	if err := b.waits(ctx); err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		failed = append(failed, fmt.Sprintf("wait scenarios: %v", err))
	}
	if calls, conns := b.webhook.calls.Load(), b.webhook.conns.Load(); calls > 0 {
		b.logf("webhook: %d calls over %d TCP connections", calls, conns)
	}
	b.res.Machine.LoadAtEnd = loadAverage()
	b.res.Duration = time.Since(started).Round(time.Second).String()
	b.res.FillRatios()
	b.res.Targets = report.Evaluate(b.res)
	if err := b.write(); err != nil {
		return false, err
	}
	for _, t := range b.res.Targets {
		missed = missed || !t.Pass
	}
	if len(failed) > 0 {
		return missed, fmt.Errorf("%d measurement(s) failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return missed, nil
}

// write prints the markdown and writes results.json, results.md and
// chart.png.
func (b *bench) write() error {
	var md bytes.Buffer
	report.Markdown(&md, b.res)
	fmt.Print(md.String())
	data, err := json.MarshalIndent(b.res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.out, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.out, "results.md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	// The chart is drawn by bench/plot, a module of its own (its drawing
	// library is not the main module's), from the results just written.
	results, err := filepath.Abs(filepath.Join(b.out, "results.json"))
	if err != nil {
		return err
	}
	plot := exec.Command(goTool(), "-C", "bench/plot", "run", ".", "-results", results, "-out", filepath.Join(filepath.Dir(results), "chart.png"))
	if out, err := plot.CombinedOutput(); err != nil {
		return fmt.Errorf("drawing chart.png (bench/plot): %w\n%s", err, out)
	}
	b.logf("wrote %s, results.md and chart.png", filepath.Join(b.out, "results.json"))
	return nil
}

// webhookServer is the cleanup endpoint of the webhook policy: it answers
// Success at once, on 127.0.0.1 only.
type webhookServer struct {
	url          string
	srv          *http.Server
	calls, conns atomic.Int64
}

func startWebhook() (*webhookServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &webhookServer{url: "http://" + ln.Addr().String() + "/cleanup"}
	w.srv = &http.Server{
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.calls.Add(1)
			rw.Header().Set("Content-Type", "application/json")
			_, _ = rw.Write([]byte(`{"status":"Success"}`))
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				w.conns.Add(1)
			}
		},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = w.srv.Serve(ln) }()
	return w, nil
}

func (w *webhookServer) close() { _ = w.srv.Close() }

func machine() report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadAtStart: loadAverage()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				m.MemoryGiB = round(kb/(1<<20), 1)
			}
		}
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if assets, err := testenv.AssetsDir(); err == nil {
		if out, err := exec.Command(filepath.Join(assets, "etcd"), "--version").Output(); err == nil {
			first, _, _ := strings.Cut(string(out), "\n")
			m.Etcd = strings.TrimSpace(strings.TrimPrefix(first, "etcd Version:"))
		}
	}
	return m
}

func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
