/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package fairqueue is a client-go work queue that hands its items out in
// turn across lanes (namespaces), not first come first served: a tenant who
// queues a thousand items delays another tenant's one item by at most one
// item of each other lane with work, not by the thousand.
package fairqueue

import (
	"k8s.io/client-go/util/workqueue"
)

// Queue is the storage of a client-go work queue (workqueue.Queue): items
// are kept first in, first out within their lane, and Pop takes from the
// lanes with items in turn. The work queue around it calls it from one
// goroutine at a time, and dedupes items before they reach it.
type Queue[T comparable] struct {
	laneOf func(T) string
	lanes  map[string][]T
	// turn lists the lanes with items in the order they are served; next
	// is the index in turn of the lane Pop serves next.
	turn []string
	next int
	n    int
}

// New returns an empty Queue whose items go to the lane laneOf names.
func New[T comparable](laneOf func(T) string) *Queue[T] {
	return &Queue[T]{laneOf: laneOf, lanes: map[string][]T{}}
}

// Touch is called when a queued item is added again: it keeps its place.
func (q *Queue[T]) Touch(T) {}

// Push adds item at the end of its lane; a lane that had no items joins the
// turn just before the lane served next, so it waits a full round at most.
func (q *Queue[T]) Push(item T) {
	lane := q.laneOf(item)
	items, ok := q.lanes[lane]
	if !ok {
		q.turn = append(q.turn, "")
		copy(q.turn[q.next+1:], q.turn[q.next:])
		q.turn[q.next] = lane
		q.next++
		if q.next == len(q.turn) {
			q.next = 0
		}
	}
	q.lanes[lane] = append(items, item)
	q.n++
}

// Len is how many items are queued in all lanes.
func (q *Queue[T]) Len() int { return q.n }

// Pop takes the first item of the lane whose turn it is. The work queue
// calls it only when Len is above zero.
func (q *Queue[T]) Pop() T {
	lane := q.turn[q.next]
	items := q.lanes[lane]
	item := items[0]
	var zero T
	items[0] = zero // let it be collected
	items = items[1:]
	q.n--
	if len(items) == 0 {
		delete(q.lanes, lane)
		q.turn = append(q.turn[:q.next], q.turn[q.next+1:]...)
	} else {
		q.lanes[lane] = items
		q.next++
	}
	if q.next >= len(q.turn) {
		q.next = 0
	}
	return item
}

// NewRateLimiting is a rate-limiting work queue (what a controller-runtime
// controller's NewQueue returns) whose storage is a Queue over laneOf, with
// client-go's metrics under name.
func NewRateLimiting[T comparable](name string, rateLimiter workqueue.TypedRateLimiter[T], laneOf func(T) string) workqueue.TypedRateLimitingInterface[T] {
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, Queue: New(laneOf)})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: name, Queue: q})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter, workqueue.TypedRateLimitingQueueConfig[T]{Name: name, DelayingQueue: delaying})
}
