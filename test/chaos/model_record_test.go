/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// record is one thing the model's watches saw. Gap marks a record made up
// from a new list after a watch could not resume (its resourceVersion was
// too old, as after a kube-apiserver restart): what changed in between is
// known only as a difference between two states, at the time of the list.
type record struct {
	Seq  int
	At   time.Time
	Kind string
	Type watch.EventType
	Gap  bool
	Obj  client.Object
}

// recorder keeps every event of the kinds the checker reads, in the order
// each watch delivered them, from a list taken before the model starts.
type recorder struct {
	mu      sync.Mutex
	recs    []record
	last    map[string]map[types.UID]client.Object
	relists map[string]int
	errors  []string
}

// source lists and watches one kind, cluster-wide.
type source struct {
	kind  string
	list  func(ctx context.Context) ([]client.Object, string, error)
	watch func(ctx context.Context, rv string) (watch.Interface, error)
}

func newRecorder() *recorder {
	return &recorder{last: map[string]map[types.UID]client.Object{}, relists: map[string]int{}}
}

// modelSources are the kinds the checker reads: the guarded kind, the
// policies, the namespaces and the Events.
func modelSources(wc client.WithWatch) []source {
	raw := func(rv string) *client.ListOptions {
		return &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}}
	}
	typed := func(kind string, newList func() client.ObjectList, items func(client.ObjectList) []client.Object) source {
		return source{kind: kind,
			list: func(ctx context.Context) ([]client.Object, string, error) {
				l := newList()
				if err := wc.List(ctx, l); err != nil {
					return nil, "", err
				}
				return items(l), l.GetResourceVersion(), nil
			},
			watch: func(ctx context.Context, rv string) (watch.Interface, error) {
				return wc.Watch(ctx, newList(), raw(rv))
			},
		}
	}
	return []source{
		typed("ConfigMap", func() client.ObjectList { return &corev1.ConfigMapList{} }, func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*corev1.ConfigMapList).Items {
				out = append(out, &l.(*corev1.ConfigMapList).Items[i])
			}
			return out
		}),
		typed("Namespace", func() client.ObjectList { return &corev1.NamespaceList{} }, func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*corev1.NamespaceList).Items {
				out = append(out, &l.(*corev1.NamespaceList).Items[i])
			}
			return out
		}),
		typed("Event", func() client.ObjectList { return &corev1.EventList{} }, func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*corev1.EventList).Items {
				out = append(out, &l.(*corev1.EventList).Items[i])
			}
			return out
		}),
		typed("TeardownPolicy", func() client.ObjectList { return &teardownv1alpha1.TeardownPolicyList{} }, func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*teardownv1alpha1.TeardownPolicyList).Items {
				out = append(out, &l.(*teardownv1alpha1.TeardownPolicyList).Items[i])
			}
			return out
		}),
		typed("ClusterTeardownPolicy", func() client.ObjectList { return &teardownv1alpha1.ClusterTeardownPolicyList{} }, func(l client.ObjectList) []client.Object {
			var out []client.Object
			for i := range l.(*teardownv1alpha1.ClusterTeardownPolicyList).Items {
				out = append(out, &l.(*teardownv1alpha1.ClusterTeardownPolicyList).Items[i])
			}
			return out
		}),
	}
}

// start lists every source, then watches each from its list until ctx
// ends; it returns once every first list is recorded.
func (r *recorder) start(ctx context.Context, sources []source) (done <-chan struct{}) {
	var wg sync.WaitGroup
	listed := make(chan struct{}, len(sources))
	for _, s := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.follow(ctx, s, listed)
		}()
	}
	for range sources {
		select {
		case <-listed:
		case <-ctx.Done():
		}
	}
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

func (r *recorder) follow(ctx context.Context, s source, listed chan<- struct{}) {
	first, relist, rv := true, true, ""
	for ctx.Err() == nil {
		if relist {
			items, listRV, err := s.list(ctx)
			if err != nil {
				sleepCtx(ctx, 200*time.Millisecond)
				continue
			}
			r.applyList(s.kind, items, first)
			if first {
				listed <- struct{}{}
			}
			first, relist, rv = false, false, listRV
		}
		w, err := s.watch(ctx, rv)
		if err != nil {
			relist = apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				relist = apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
				r.mu.Lock()
				r.errors = append(r.errors, s.kind+": "+err.Error())
				r.mu.Unlock()
			case watch.Bookmark:
				if o, ok := ev.Object.(client.Object); ok {
					rv = o.GetResourceVersion()
				}
			default:
				o, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				rv = o.GetResourceVersion()
				r.add(s.kind, ev.Type, o, false)
			}
			if relist {
				break
			}
		}
		w.Stop()
	}
}

// applyList records a list: the first as it is; a later one (after a
// watch gap) as the differences from what was last seen, marked Gap.
func (r *recorder) applyList(kind string, items []client.Object, first bool) {
	seen := map[types.UID]bool{}
	for _, o := range items {
		seen[o.GetUID()] = true
	}
	r.mu.Lock()
	last := r.last[kind]
	if !first {
		r.relists[kind]++
	}
	r.mu.Unlock()
	if !first {
		for uid, o := range last {
			if !seen[uid] {
				r.add(kind, watch.Deleted, o, true)
			}
		}
	}
	for _, o := range items {
		prev, known := last[o.GetUID()]
		switch {
		case first:
			r.add(kind, watch.Added, o, false)
		case !known:
			r.add(kind, watch.Added, o, true)
		case prev.GetResourceVersion() != o.GetResourceVersion():
			r.add(kind, watch.Modified, o, true)
		}
	}
}

func (r *recorder) add(kind string, typ watch.EventType, o client.Object, gap bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last[kind] == nil {
		r.last[kind] = map[types.UID]client.Object{}
	}
	if typ == watch.Deleted {
		delete(r.last[kind], o.GetUID())
	} else {
		r.last[kind][o.GetUID()] = o
	}
	r.recs = append(r.recs, record{Seq: len(r.recs), At: time.Now(), Kind: kind, Type: typ, Gap: gap, Obj: o})
}

// snapshot returns what was recorded so far.
func (r *recorder) snapshot() ([]record, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	relists := map[string]int{}
	for k, v := range r.relists {
		relists[k] = v
	}
	return append([]record(nil), r.recs...), relists
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
