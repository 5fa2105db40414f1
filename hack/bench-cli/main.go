/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command bench-cli measures `kubectl teardown status` against the usual
// `kubectl api-resources` + `kubectl get` loop on the same local control
// plane, in the same run, and prints the ratio.
//
//	make bench-cli                         # 100 CRDs, 20,000 objects
//	go run ./hack/bench-cli -crds 10 -objects 2000 -runs 1
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/teardown-dev/teardown/internal/testenv"
)

func main() {
	crds := flag.Int("crds", 100, "CRDs to install")
	objects := flag.Int("objects", 20000, "custom resources to create, spread over the CRDs")
	namespaces := flag.Int("namespaces", 20, "namespaces the objects are spread over")
	terminating := flag.Float64("terminating", 0.01, "fraction of objects left Terminating (held by a finalizer)")
	runs := flag.Int("runs", 3, "timed runs of each side (the median is reported)")
	plugin := flag.String("plugin", "bin/kubectl-teardown", "kubectl-teardown binary")
	minRatio := flag.Float64("min-ratio", 5, "fail when the speed-up is below this")
	explains := flag.Int("explain", 0, "also time kubectl teardown explain on this many Terminating objects, one process each (0: not)")
	baseline := flag.String("baseline-plugin", "", "another kubectl-teardown binary whose explain is timed on the same objects, alternating with -plugin")
	flag.Parse()
	if err := run(*crds, *objects, *namespaces, *terminating, *runs, *plugin, *minRatio, explainOptions{n: *explains, baseline: *baseline}); err != nil {
		fmt.Fprintln(os.Stderr, "bench-cli:", err)
		os.Exit(1)
	}
}

// explainOptions say whether, and against what, explain is timed.
type explainOptions struct {
	n        int
	baseline string
}

func run(nCRDs, nObjects, nNamespaces int, terminating float64, runs int, plugin string, minRatio float64, ex explainOptions) error {
	assets, err := testenv.AssetsDir()
	if err != nil {
		return err
	}
	kubectl := filepath.Join(assets, "kubectl")
	if plugin, err = filepath.Abs(plugin); err != nil {
		return err
	}
	if _, err := os.Stat(plugin); err != nil {
		return fmt.Errorf("%s: run make plugin first: %w", plugin, err)
	}
	env, err := testenv.Start(testenv.Options{Log: os.Stderr})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := context.Background()

	if err := runningOwner(ctx, dyn); err != nil {
		return err
	}
	start := time.Now()
	kinds, err := installCRDs(ctx, dyn, nCRDs)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "installed %d CRDs in %s\n", nCRDs, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	want, err := createObjects(ctx, dyn, kinds, nObjects, nNamespaces, terminating)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "created %d objects (%d Terminating) in %s\n", nObjects, want, time.Since(start).Round(time.Millisecond))

	home, err := os.MkdirTemp("", "bench-cli-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cmdEnv := append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "HOME="+home)

	var kubectlTimes, pluginTimes []time.Duration
	for i := range runs {
		d, found, err := kubectlLoop(kubectl, cmdEnv)
		if err != nil {
			return err
		}
		if found != want+nNamespacesTerminating {
			return fmt.Errorf("kubectl loop found %d Terminating objects, want %d", found, want)
		}
		kubectlTimes = append(kubectlTimes, d)
		d, found, err = pluginStatus(plugin, cmdEnv)
		if err != nil {
			return err
		}
		if found != want+nNamespacesTerminating {
			return fmt.Errorf("kubectl teardown status found %d Terminating objects, want %d", found, want)
		}
		pluginTimes = append(pluginTimes, d)
		fmt.Fprintf(os.Stderr, "run %d: kubectl loop %s, kubectl teardown status %s\n", i+1, kubectlTimes[i].Round(time.Millisecond), d.Round(time.Millisecond))
	}
	k, p := median(kubectlTimes), median(pluginTimes)
	ratio := float64(k) / float64(p)
	fmt.Printf("cluster: %d CRDs, %d objects in %d namespaces, %d Terminating\n", nCRDs, nObjects, nNamespaces, want)
	fmt.Printf("kubectl api-resources + kubectl get loop: %s (median of %d)\n", k.Round(time.Millisecond), runs)
	fmt.Printf("kubectl teardown status:                  %s (median of %d)\n", p.Round(time.Millisecond), runs)
	fmt.Printf("speed-up: %.1fx (required: %.1fx)\n", ratio, minRatio)
	if ex.n > 0 {
		if err := timeExplain(plugin, kubectl, cmdEnv, kinds, nObjects, nNamespaces, terminating, ex); err != nil {
			return err
		}
	}
	if ratio < minRatio {
		return fmt.Errorf("speed-up %.1fx is below %.1fx", ratio, minRatio)
	}
	return nil
}

// ownerName is the client that writes the held objects' finalizer, and
// the Deployment that runs it: explain finds it alive, so every pass of
// a live owner's cleanup runs (issue 26's families).
const ownerName = "bench-operator"

// runningOwner creates ops/bench-operator, a Deployment whose status says
// its replica is ready (no kubelet runs here).
func runningOwner(ctx context.Context, dyn dynamic.Interface) error {
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ops"}}}
	if _, err := dyn.Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	labels := map[string]any{"app": ownerName}
	d := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": ownerName, "namespace": "ops", "labels": labels},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
				"containers": []any{map[string]any{"name": "manager", "image": "example.io/bench-operator:v1", "command": []any{"/" + ownerName}}}}}}}}
	created, err := dyn.Resource(gvr).Namespace("ops").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the owner: %w", err)
	}
	created.Object["status"] = map[string]any{"observedGeneration": created.GetGeneration(), "replicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1), "updatedReplicas": int64(1)}
	if _, err := dyn.Resource(gvr).Namespace("ops").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("the owner's status: %w", err)
	}
	// It may remove its finalizer: explain asks what its cleanup waits on.
	crb := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": ownerName},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "ops"}}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}).Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the owner's rights: %w", err)
	}
	return nil
}

// timeExplain runs explain on ex.n Terminating objects, one process each as
// a person runs it, alternating with the baseline binary when there is one
// (same objects, same load), and a plain kubectl get of each (the cost of
// one process and one read); it prints each side's median per target.
func timeExplain(plugin, kubectl string, env []string, kinds []schema.GroupVersionResource, nObjects, nNamespaces int, terminating float64, ex explainOptions) error {
	every := int(1 / terminating)
	type target struct{ resource, ns string }
	var targets []target
	for i := 0; i < nObjects && len(targets) < ex.n; i += every {
		gvr := kinds[i%len(kinds)]
		targets = append(targets, target{fmt.Sprintf("%s.%s/obj-%d", gvr.Resource, gvr.Group, i), fmt.Sprintf("bench-%d", i%nNamespaces)})
	}
	said := map[string]bool{}
	one := func(bin string, args ...string) (time.Duration, error) {
		start := time.Now()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.Output()
		d := time.Since(start)
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
			return 0, fmt.Errorf("%s %s: %w", filepath.Base(bin), strings.Join(args, " "), err)
		}
		var rep struct {
			Verdict string   `json:"verdict"`
			Checked []string `json:"checked"`
		}
		if args[0] == "explain" {
			if err := json.Unmarshal(out, &rep); err != nil {
				return 0, fmt.Errorf("%s %s: %w", filepath.Base(bin), strings.Join(args, " "), err)
			}
			if !said[bin] {
				said[bin] = true
				fmt.Fprintf(os.Stderr, "%s %s: %s, checked %q\n", filepath.Base(bin), strings.Join(args, " "), rep.Verdict, rep.Checked)
			}
		}
		return d, nil
	}
	var after, before, get []time.Duration
	for _, t := range targets {
		d, err := one(plugin, "explain", t.resource, "-n", t.ns, "-o", "json")
		if err != nil {
			return err
		}
		after = append(after, d)
		if ex.baseline != "" {
			d, err := one(ex.baseline, "explain", t.resource, "-n", t.ns, "-o", "json")
			if err != nil {
				return err
			}
			before = append(before, d)
		}
		d, err = one(kubectl, "get", t.resource, "-n", t.ns, "-o", "json")
		if err != nil {
			return err
		}
		get = append(get, d)
	}
	fmt.Printf("kubectl teardown explain:                 %s median per target (%d targets, owner running; p90 %s)\n", median(after).Round(time.Millisecond), len(after), p90(after).Round(time.Millisecond))
	if len(before) > 0 {
		fmt.Printf("baseline explain (%s):    %s median per target (same targets, alternating; p90 %s)\n", ex.baseline, median(before).Round(time.Millisecond), p90(before).Round(time.Millisecond))
	}
	fmt.Printf("kubectl get of the same object:           %s median per target\n", median(get).Round(time.Millisecond))
	return nil
}

func p90(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)*9/10]
}

// No namespace is deleted by the benchmark.
const nNamespacesTerminating = 0

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

var gvrCRD = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func installCRDs(ctx context.Context, dyn dynamic.Interface, n int) ([]schema.GroupVersionResource, error) {
	var out []schema.GroupVersionResource
	for i := range n {
		group := fmt.Sprintf("g%d.bench.teardown.test", i)
		plural := fmt.Sprintf("things%d", i)
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + "." + group},
			"spec": map[string]any{"group": group, "scope": "Namespaced",
				"names": map[string]any{"plural": plural, "singular": fmt.Sprintf("thing%d", i), "kind": fmt.Sprintf("Thing%d", i), "listKind": fmt.Sprintf("Thing%dList", i)},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
		}}
		if _, err := dyn.Resource(gvrCRD).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating CRD %s: %w", plural, err)
		}
		out = append(out, schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural})
	}
	// Wait until every kind serves.
	for _, gvr := range out {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil, nil
		})
		if err != nil {
			return nil, fmt.Errorf("waiting for %s: %w", gvr, err)
		}
	}
	return out, nil
}

// createObjects creates n custom resources; a fraction carry a finalizer and
// are deleted, so they stay Terminating. It returns how many.
func createObjects(ctx context.Context, dyn dynamic.Interface, kinds []schema.GroupVersionResource, n, nNamespaces int, terminating float64) (int, error) {
	for i := range nNamespaces {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": fmt.Sprintf("bench-%d", i)}}}
		if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
	}
	every := 0
	if terminating > 0 {
		every = int(1 / terminating)
	}
	var (
		next, held atomic.Int64
		firstErr   error
		mu         sync.Mutex
		wg         sync.WaitGroup
	)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				gvr := kinds[i%len(kinds)]
				ns := fmt.Sprintf("bench-%d", i%nNamespaces)
				name := fmt.Sprintf("obj-%d", i)
				hold := every > 0 && i%every == 0
				meta := map[string]any{"name": name, "namespace": ns}
				if hold {
					meta["finalizers"] = []any{"bench.teardown.test/hold"}
				}
				obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "", "metadata": meta, "spec": map[string]any{"index": int64(i)}}}
				obj.SetKind(kindOf(gvr))
				opts := metav1.CreateOptions{}
				if hold {
					opts.FieldManager = ownerName // the finalizer's writer, as explain reads it
				}
				_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, opts)
				if err == nil && hold {
					err = dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
					held.Add(1)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("creating %s %s/%s: %w", gvr.Resource, ns, name, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return int(held.Load()), firstErr
}

func kindOf(gvr schema.GroupVersionResource) string {
	return "Thing" + strings.TrimPrefix(gvr.Resource, "things")
}

// kubectlLoop is the usual recipe:
//
//	kubectl api-resources --verbs=list -o name | xargs -n 1 kubectl get -A -o json
//
// counting the items with a deletionTimestamp.
func kubectlLoop(kubectl string, env []string) (time.Duration, int, error) {
	start := time.Now()
	cmd := exec.Command(kubectl, "api-resources", "--verbs=list", "-o", "name")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("kubectl api-resources: %w", err)
	}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		res := strings.TrimSpace(sc.Text())
		if res == "" || res == "events" || res == "events.events.k8s.io" {
			continue
		}
		get := exec.Command(kubectl, "get", res, "-A", "-o", "json", "--ignore-not-found")
		get.Env = env
		var stdout bytes.Buffer
		get.Stdout = &stdout
		if err := get.Run(); err != nil {
			continue // forbidden or not listable: the loop carries on, as xargs does
		}
		var list struct {
			Items []struct {
				Metadata struct {
					DeletionTimestamp *string `json:"deletionTimestamp"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if json.Unmarshal(stdout.Bytes(), &list) != nil {
			continue
		}
		for _, it := range list.Items {
			if it.Metadata.DeletionTimestamp != nil {
				found++
			}
		}
	}
	return time.Since(start), found, nil
}

func pluginStatus(plugin string, env []string) (time.Duration, int, error) {
	start := time.Now()
	cmd := exec.Command(plugin, "status", "-A", "-o", "json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("kubectl teardown status: %w", err)
	}
	d := time.Since(start)
	var rep struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return 0, 0, fmt.Errorf("decoding status: %w", err)
	}
	return d, len(rep.Items), nil
}
