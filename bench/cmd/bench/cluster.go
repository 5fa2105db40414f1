/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/teardown-dev/teardown/bench/apimetrics"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// teardownQueues are the teardown-controller's target workqueues: attaching
// and cleanups.
const teardownQueues = "target-attach,target-finalize"

// benchLabel is on every object the benchmark creates; the policies and the
// baseline select it.
const benchLabel, benchValue = "app", "bench"

// createNamespace creates ns, whose default ServiceAccount may patch its
// ConfigMaps: the benchmarked TeardownPolicies act as it.
func (b *bench) createNamespace(ctx context.Context, ns string) error {
	_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "bench-policy", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch"}},
	}}
	if _, err := b.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the policies' Role in %s: %w", ns, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-policy", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}}}
	if _, err := b.kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding the policies' Role in %s: %w", ns, err)
	}
	return nil
}

// objectNames returns n names: prefix-00000...
func objectNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return names
}

// createConfigMaps creates one ConfigMap per name with dataBytes of data and
// the given finalizers, from the driver's workers. It returns their UIDs.
func (b *bench) createConfigMaps(ctx context.Context, ns string, names []string, finalizers []string, dataBytes int) ([]types.UID, error) {
	var data map[string]string
	if dataBytes > 0 {
		data = map[string]string{"data": strings.Repeat("0123456789abcdef", dataBytes/16+1)[:dataBytes]}
	}
	uids := make([]types.UID, len(names))
	err := parallel(ctx, b.driverWorkers, len(names), func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: ns, Labels: map[string]string{benchLabel: benchValue}, Finalizers: finalizers},
			Data:       data,
		}
		got, err := b.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, names[i], err)
		}
		uids[i] = got.UID
		return nil
	})
	return uids, err
}

// deleteConfigMaps deletes every name from workers goroutines, then runs
// after (if not nil) on it in the same goroutine, and returns when each
// DELETE was sent.
func (b *bench) deleteConfigMaps(ctx context.Context, ns string, names []string, workers int, after func(ctx context.Context, i int) error) ([]time.Time, error) {
	starts := make([]time.Time, len(names))
	err := parallel(ctx, workers, len(names), func(ctx context.Context, i int) error {
		starts[i] = time.Now()
		if err := b.kube.CoreV1().ConfigMaps(ns).Delete(ctx, names[i], metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting ConfigMap %s/%s: %w", ns, names[i], err)
		}
		if after != nil {
			return after(ctx, i)
		}
		return nil
	})
	return starts, err
}

// parallel runs fn for 0..n-1 on workers goroutines and returns the first
// error, after which no new index is started.
func parallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// tracker watches the ConfigMaps of one namespace (metadata only) and
// records when each first carried a finalizer key and when it was gone.
type tracker struct {
	key      string
	cancel   context.CancelFunc
	mu       sync.Mutex
	attached map[string]time.Time
	gone     map[string]time.Time
	err      error
}

func (b *bench) track(ctx context.Context, ns, key string) (*tracker, error) {
	list, err := b.meta.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("listing ConfigMaps in %s: %w", ns, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return b.meta.Resource(configMaps).Namespace(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching ConfigMaps in %s: %w", ns, err)
	}
	t := &tracker{key: key, cancel: cancel, attached: map[string]time.Time{}, gone: map[string]time.Time{}}
	go func() {
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				now := time.Now()
				t.mu.Lock()
				switch obj := ev.Object.(type) {
				case *metav1.PartialObjectMetadata:
					switch ev.Type {
					case watch.Added, watch.Modified:
						if _, seen := t.attached[obj.Name]; !seen && slices.Contains(obj.Finalizers, t.key) {
							t.attached[obj.Name] = now
						}
					case watch.Deleted:
						t.gone[obj.Name] = now
					}
				case *metav1.Status:
					t.err = fmt.Errorf("watch error: %s", obj.Message)
				}
				t.mu.Unlock()
			}
		}
	}()
	return t, nil
}

func (t *tracker) stop() { t.cancel() }

// counts returns how many objects named in names are attached and gone.
func (t *tracker) counts(names []string) (attached, gone int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range names {
		if _, ok := t.attached[n]; ok {
			attached++
		}
		if _, ok := t.gone[n]; ok {
			gone++
		}
	}
	return attached, gone
}

func (t *tracker) goneAt(name string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.gone[name]
	return at, ok
}

// waitFor polls cond every 20ms until it holds, ctx ends or timeout passes;
// the error says what was awaited and what was last seen.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (%s)", timeout, what, seen)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitAttached waits until every name carries the tracked key.
func (t *tracker) waitAttached(ctx context.Context, names []string, timeout time.Duration) error {
	return waitFor(ctx, timeout, fmt.Sprintf("%d objects to carry %s", len(names), t.key), func() (bool, string) {
		a, _ := t.counts(names)
		return a == len(names), fmt.Sprintf("%d carry it", a)
	})
}

// waitGone waits until every name is deleted.
func (t *tracker) waitGone(ctx context.Context, names []string, timeout time.Duration) error {
	return waitFor(ctx, timeout, fmt.Sprintf("%d objects to be gone", len(names)), func() (bool, string) {
		_, g := t.counts(names)
		return g == len(names), fmt.Sprintf("%d gone", g)
	})
}

// scrape reads the API server's request counters.
func (b *bench) scrape(ctx context.Context) (apimetrics.Snapshot, error) {
	return apimetrics.Scrape(ctx, b.kube.Discovery().RESTClient())
}

// controlPlaneCPU returns the CPU seconds used so far by etcd,
// kube-apiserver and kube-controller-manager, the children of this process
// that testenv started, and by this process.
func controlPlaneCPU() map[string]float64 {
	out := map[string]float64{"bench-driver": cpuSeconds(os.Getpid())}
	self := strconv.Itoa(os.Getpid())
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		comm, fields, ok := parseStat(string(stat))
		if !ok || fields[1] != self {
			continue
		}
		switch comm {
		case "etcd", "kube-apiserver", "kube-controller":
			if comm == "kube-controller" {
				comm = "kube-controller-manager"
			}
			out[comm] += cpuSeconds(pid)
		}
	}
	return out
}

// parseStat splits /proc/PID/stat into the command name and the fields after
// it (fields[0] is the state, fields[1] the parent PID).
func parseStat(stat string) (string, []string, bool) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 13 {
		return "", nil, false
	}
	return stat[open+1 : end], fields, true
}

// cpuSeconds returns a process's user+system CPU time.
func cpuSeconds(pid int) float64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, fields, ok := parseStat(string(stat))
	if !ok {
		return 0
	}
	// utime and stime are fields 14 and 15 of stat, 11 and 12 after the
	// command name, in clock ticks of 1/100 s on Linux.
	u, _ := strconv.ParseFloat(fields[11], 64)
	s, _ := strconv.ParseFloat(fields[12], 64)
	return (u + s) / 100
}

func subCPU(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		out[k] = round(v-before[k], 2)
	}
	return out
}

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
