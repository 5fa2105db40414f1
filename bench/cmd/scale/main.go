/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command scale is the scale benchmark (make bench-scale, docs/performance.md
// "Scale"): on a local control plane tuned for the size, it measures the
// teardown-controller (bench/cmd/teardown, a process of its own) with
// -namespaces namespaces of -objects-per-ns guarded ConfigMaps and one
// TeardownPolicy each, a namespace of -big-ns-objects more, a
// ClusterTeardownPolicy with an unused step on one ServiceAccount per
// namespace and -pods pods running as them:
//
//  1. policy growth: TeardownPolicies added to a running controller in
//     batches (-growth), each batch's reconciles, wall time and CPU;
//  2. the objects created with no controller running, then a cold start:
//     time to all attached, RSS, live heap;
//  3. one policy status pass and (4) one diagnosis pass, as the CPU a
//     profile spends under their functions;
//  5. attach latency of objects created one at a time (-paced-objects), then
//     at full rate (-attach-objects) into the full cluster, in parts (the
//     create, the API server's watch delivery, the controller's part) beside
//     the controller's attach queue and the API server's create and PATCH
//     times (attach.go); -attach-only stops after it;
//  6. the big namespace deleted: drain time and API requests;
//  7. the attach-at-create webhook (a controller serving it, webhook.go):
//     -webhook-objects ConfigMaps at full rate that it skips, then as many
//     through it; its latency as the API server measured its calls, the
//     CREATE times with and without it, the answers carrying the key.
//
// It writes results.md, results.json, logs and profiles to -out.
//
//	make bench-scale                                          # full size
//	go run ./bench/cmd/scale -namespaces 20 -pods 400 -big-ns-objects 1000 -growth 5,10,20
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/bench/scale"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

type options struct {
	namespaces, objectsPerNs, bigNsObjects, pods int
	growth                                       []int
	attachObjects, pacedObjects                  int
	pace                                         time.Duration
	attachOnly                                   bool
	attachProfile                                time.Duration
	driverWorkers                                int
	statusInterval, diagnoseAfter                time.Duration
	diagnoseInterval                             time.Duration
	attachTimeout                                time.Duration
	controllerArgs                               []string
	out                                          string
}

type scaler struct {
	opts options
	out  string
	env  *testenv.Env
	kube kubernetes.Interface
	meta metadata.Interface
	crc  client.Client
	res  *scale.Results
}

func main() {
	var o options
	var growth, args string
	flag.IntVar(&o.namespaces, "namespaces", 1000, "Namespaces, each with one TeardownPolicy and its guarded ConfigMaps.")
	flag.IntVar(&o.objectsPerNs, "objects-per-ns", 100, "Guarded ConfigMaps per namespace.")
	flag.IntVar(&o.bigNsObjects, "big-ns-objects", 10000, "Guarded ConfigMaps in the namespace whose deletion is timed.")
	flag.IntVar(&o.pods, "pods", 20000, "Pods (never scheduled) running as the namespaces' guarded ServiceAccounts, for the unused step's index.")
	flag.StringVar(&growth, "growth", "100,300,1000", "Policies in the cluster after each batch of the growth phase; the last must not exceed -namespaces.")
	flag.IntVar(&o.attachObjects, "attach-objects", 2000, "ConfigMaps created at full rate for the attach latency.")
	flag.IntVar(&o.pacedObjects, "paced-objects", 20, "ConfigMaps created one at a time, -pace apart, for the attach latency with nothing queued.")
	flag.BoolVar(&o.attachOnly, "attach-only", false, "After the cold start, measure the attach latency only (no status pass, drain nor diagnosis).")
	flag.IntVar(&webhookFlags.objects, "webhook-objects", 2000, "ConfigMaps created at full rate without, then through, the attach-at-create webhook (last phase; 0 skips it).")
	flag.BoolVar(&webhookFlags.only, "webhook-only", false, "After creating the objects, measure the attach webhook only (its controller does the cold start).")
	flag.DurationVar(&o.attachProfile, "attach-profile", 0, "Record a CPU profile of the controller this long from the start of each attach burst (profiles/attach-*.pprof); 0 records none.")
	flag.DurationVar(&o.pace, "pace", 250*time.Millisecond, "Time between the paced ConfigMaps' creates.")
	flag.IntVar(&o.driverWorkers, "driver-workers", 32, "Goroutines that create and delete the objects.")
	flag.DurationVar(&o.statusInterval, "status-interval", 15*time.Second, "The controller's --status-interval; the status pass is profiled over 3 of them.")
	flag.DurationVar(&o.diagnoseAfter, "diagnose-after", 10*time.Second, "The controller's --diagnose-after.")
	flag.DurationVar(&o.diagnoseInterval, "diagnose-interval", 20*time.Second, "The controller's --diagnose-interval; the diagnosis pass is profiled over 3 of them.")
	flag.DurationVar(&o.attachTimeout, "attach-timeout", 30*time.Minute, "How long the cold start may take to attach everything.")
	flag.StringVar(&args, "controller-args", "", "Comma-separated extra flags of the controller (--target-workers=32).")
	flag.StringVar(&o.out, "out", "_out/bench-scale", "Folder for results.md, results.json, logs and profiles.")
	render := flag.Bool("render", false, "Only write <out>/results.md again from <out>/results.json, and run nothing.")
	flag.Parse()
	if *render {
		if err := rerender(o.out); err != nil {
			fmt.Fprintln(os.Stderr, "scale:", err)
			os.Exit(1)
		}
		return
	}
	for _, f := range strings.Split(growth, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v <= 0 || v > o.namespaces || (len(o.growth) > 0 && v <= o.growth[len(o.growth)-1]) {
			fmt.Fprintf(os.Stderr, "scale: -growth %q: want increasing counts up to -namespaces\n", growth)
			os.Exit(2)
		}
		o.growth = append(o.growth, v)
	}
	if args != "" {
		o.controllerArgs = strings.Split(args, ",")
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

// tuning is what the control plane is given for the size, beside why.
var tuning = []struct{ process, flag, value, why string }{
	{"etcd", "quota-backend-bytes", strconv.Itoa(8 << 30), "8 GiB instead of 2 GiB: 130,000 objects and their history before compaction"},
	{"kube-apiserver", "max-requests-inflight", "800", "twice the default 400; with priority and fairness on, the two limits are summed into one concurrency budget (1,200) shared by the driver's 32 writers, the controller and kube-controller-manager"},
	{"kube-apiserver", "max-mutating-requests-inflight", "400", "twice the default 200"},
	{"kube-apiserver", "watch-cache", "true", "kept on (the default), so the controller's and kube-controller-manager's lists of 100,000 objects are served from memory, not etcd (in 1.36 its size is dynamic: no per-resource size to tune)"},
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := testenv.ModuleRoot()
	if err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	s := &scaler{opts: o, out: o.out}
	if err := os.RemoveAll(filepath.Join(o.out, "env")); err != nil {
		return err
	}
	for _, dir := range []string{"logs", "bin", "profiles", "env"} {
		if err := os.MkdirAll(filepath.Join(o.out, dir), 0o755); err != nil {
			return err
		}
	}
	logf("building bench/cmd/teardown into %s", filepath.Join(o.out, "bin"))
	build := exec.CommandContext(ctx, goTool(), "build", "-o", filepath.Join(o.out, "bin", "teardown"), "./bench/cmd/teardown")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building bench/cmd/teardown: %w", err)
	}
	started := time.Now()
	s.res = &scale.Results{Started: started.UTC(), Machine: machine(), Size: scale.Size{
		Namespaces: o.namespaces, ObjectsPerNs: o.objectsPerNs, BigNsObjects: o.bigNsObjects, Pods: o.pods,
		Policies: o.namespaces + 1, ClusterPolicies: 1, Guarded: o.namespaces*o.objectsPerNs + o.bigNsObjects + o.namespaces,
	}}
	envOpts := testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
		Dir:               filepath.Join(o.out, "env"),
		Log:               os.Stderr,
		APIServerArgs:     map[string]string{},
		EtcdArgs:          map[string]string{},
	}
	for _, t := range tuning {
		if t.process == "etcd" {
			envOpts.EtcdArgs[t.flag] = t.value
		} else {
			envOpts.APIServerArgs[t.flag] = t.value
		}
		s.res.Tuning = append(s.res.Tuning, fmt.Sprintf("%s --%s=%s: %s", t.process, t.flag, t.value, t.why))
	}
	env, err := testenv.Start(envOpts)
	if err != nil {
		return err
	}
	s.env = env
	defer func() {
		if err := env.Stop(); err != nil {
			logf("stopping the control plane: %v", err)
		}
	}()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1 // no client-side limit: the driver must never be the bottleneck
	cfg.Timeout = 2 * time.Minute
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if s.meta, err = metadata.NewForConfig(cfg); err != nil {
		return err
	}
	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	if s.crc, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if v, err := s.kube.Discovery().ServerVersion(); err == nil {
		s.res.Machine += ", Kubernetes " + v.GitVersion
	}
	defer func() {
		s.res.Duration = time.Since(started).Round(time.Second).String()
		s.res.Machine += ", load " + loadAverage() + " at the end"
		if err := s.write(); err != nil {
			logf("writing the results: %v", err)
		}
	}()
	return s.phases(ctx)
}

func machine() string {
	desc := fmt.Sprintf("%d CPUs", runtime.NumCPU())
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				desc += " (" + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":")) + ")"
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				desc += fmt.Sprintf(", %.1f GiB", kb/(1<<20))
			}
		}
	}
	return desc + ", " + runtime.Version() + ", load " + loadAverage() + " at the start"
}

// loadAverage is the one-minute load average: the machine is shared.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(strings.Fields(string(data))) == 0 {
		return "unknown"
	}
	return strings.Fields(string(data))[0]
}

// rerender writes results.md from results.json, for a run whose table
// layout changed since.
func rerender(out string) error {
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		return err
	}
	s := &scaler{out: out, res: &scale.Results{}}
	if err := json.Unmarshal(data, s.res); err != nil {
		return fmt.Errorf("reading results.json: %w", err)
	}
	return s.write()
}
