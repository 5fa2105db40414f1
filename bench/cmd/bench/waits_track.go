/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// waitState is what the watch saw of one namespace's target.
type waitState struct {
	guarded, pending, gone time.Time
}

// waitTracker watches a scenario's targets in every namespace (metadata
// only) and records when each carried the key, when its cleanup was
// pending (its progress record) and when it was gone.
type waitTracker struct {
	key    string
	cancel context.CancelFunc
	mu     sync.Mutex
	states map[string]*waitState
	err    error
}

func (b *bench) trackWaits(ctx context.Context, sc waitScenario) (*waitTracker, error) {
	selector := waitTargetLabel + "=" + sc.name
	res := b.meta.Resource(sc.targetResource()).Namespace("")
	list, err := res.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("listing the targets of %s: %w", sc.name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	// A retry watcher: a single watch of minutes of events may be closed by
	// the API server.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return res.Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching the targets of %s: %w", sc.name, err)
	}
	t := &waitTracker{key: sc.key(), cancel: cancel, states: map[string]*waitState{}}
	progress := finalizer.ProgressAnnotation(sc.key())
	go func() {
		defer w.Stop()
		for {
			var ev watch.Event
			var ok bool
			select {
			case <-ctx.Done():
				return
			case ev, ok = <-w.ResultChan():
			}
			if !ok {
				t.mu.Lock()
				if t.err == nil && ctx.Err() == nil {
					t.err = errors.New("the watch of the targets ended")
				}
				t.mu.Unlock()
				return
			}
			now := time.Now()
			t.mu.Lock()
			switch obj := ev.Object.(type) {
			case *metav1.Status:
				t.err = fmt.Errorf("watch error: %s", obj.Message)
			case *metav1.PartialObjectMetadata:
				s := t.states[obj.Namespace]
				if s == nil {
					s = &waitState{}
					t.states[obj.Namespace] = s
				}
				if ev.Type == watch.Deleted {
					if s.gone.IsZero() {
						s.gone = now
					}
					break
				}
				if s.guarded.IsZero() && containsString(obj.Finalizers, t.key) {
					s.guarded = now
				}
				if _, ok := obj.Annotations[progress]; ok && s.pending.IsZero() && obj.DeletionTimestamp != nil {
					s.pending = now
				}
			}
			t.mu.Unlock()
		}
	}()
	return t, nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (t *waitTracker) stop() { t.cancel() }

func (t *waitTracker) state(ns string) waitState {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.states[ns]; s != nil {
		return *s
	}
	return waitState{}
}

// forget drops what was seen in ns, whose objects are created again later.
func (t *waitTracker) forget(ns string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, ns)
}

func (t *waitTracker) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.states = map[string]*waitState{}
}

func (t *waitTracker) wait(ctx context.Context, ns, what string, cond func(*waitState) bool) error {
	return waitFor(ctx, 60*time.Second, "the target in "+ns+" to be "+what, func() (bool, string) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.err != nil {
			return false, t.err.Error()
		}
		s := t.states[ns]
		return s != nil && cond(s), ""
	})
}

func (t *waitTracker) waitAll(ctx context.Context, n int, timeout time.Duration, what string, cond func(*waitState) bool) error {
	return waitFor(ctx, timeout, fmt.Sprintf("%d targets to be %s", n, what), func() (bool, string) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.err != nil {
			return false, t.err.Error()
		}
		count := 0
		for i := range n {
			if s := t.states[waitNamespace(i)]; s != nil && cond(s) {
				count++
			}
		}
		return count == n, fmt.Sprintf("%d of %d", count, n)
	})
}
