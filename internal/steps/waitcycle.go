/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// maxCycle bounds how many cleanups a wait cycle is followed through.
const maxCycle = 8

// WaitGraph is what every cleanup in progress waits on, at one moment,
// indexed by the object torn down: a snapshot of Waiting, taken once per
// diagnosis pass and read without locks.
type WaitGraph struct {
	byKey    map[waitKey]Wait
	byTarget map[WaitRef][]Wait
}

// Graph takes a snapshot of w.
func (w *Waiting) Graph() *WaitGraph {
	g := &WaitGraph{byKey: map[waitKey]Wait{}, byTarget: map[WaitRef][]Wait{}}
	if w == nil {
		return g
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, v := range w.m {
		g.byKey[k] = v
		if v.Target != (WaitRef{}) {
			g.byTarget[v.Target] = append(g.byTarget[v.Target], v)
		}
	}
	return g
}

// Cycle returns the cleanups that wait on each other, starting with the
// one under key of the object uid: each waits on the next one's object,
// and the last on the first's. Such cleanups never finish (a delete step
// waiting for an object whose own cleanup waits for this one to be gone,
// say), whatever each does. It returns false when the cleanup waits on no
// cleanup that leads back to it within maxCycle steps, or is not known.
func (g *WaitGraph) Cycle(key string, uid types.UID) ([]Wait, bool) {
	start, ok := g.byKey[waitKey{key, uid}]
	if !ok || start.Target == (WaitRef{}) || start.Failure != "" {
		return nil, false
	}
	path := []Wait{start}
	seen := map[WaitRef]bool{start.Target: true}
	var walk func(w Wait) bool
	walk = func(w Wait) bool {
		if len(path) > maxCycle {
			return false
		}
		for _, on := range w.On {
			if on == start.Target {
				return true
			}
			if seen[on] {
				continue
			}
			seen[on] = true
			for _, next := range g.byTarget[on] {
				if next.Failure != "" {
					continue // failing: it waits on nothing now
				}
				path = append(path, next)
				if walk(next) {
					return true
				}
				path = path[:len(path)-1]
			}
		}
		return false
	}
	if !walk(start) {
		return nil, false
	}
	return slices.Clip(path), true
}
