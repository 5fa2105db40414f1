/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package fairqueue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/util/workqueue"

	"github.com/teardown-dev/teardown/internal/fairqueue"
)

// laneOf reads "lane/item".
func laneOf(s string) string { lane, _, _ := strings.Cut(s, "/"); return lane }

func TestQueueOrder(t *testing.T) {
	for name, tc := range map[string]struct {
		// ops: "+x" pushes x, "-" pops (recorded in got).
		ops  []string
		want []string
	}{
		"one lane is first in, first out": {
			ops:  []string{"+a/1", "+a/2", "+a/3", "-", "-", "-"},
			want: []string{"a/1", "a/2", "a/3"},
		},
		"a burst in one lane waits its turn behind another's one item": {
			ops:  []string{"+a/1", "+a/2", "+a/3", "+a/4", "+b/1", "-", "-", "-", "-", "-"},
			want: []string{"a/1", "b/1", "a/2", "a/3", "a/4"},
		},
		"lanes take turns": {
			ops:  []string{"+a/1", "+a/2", "+b/1", "+b/2", "+c/1", "-", "-", "-", "-", "-"},
			want: []string{"a/1", "b/1", "c/1", "a/2", "b/2"},
		},
		"a lane that joins late waits one round at most": {
			ops:  []string{"+a/1", "+a/2", "+a/3", "+b/1", "+b/2", "-", "+c/1", "-", "-", "-", "-", "-"},
			want: []string{"a/1", "b/1", "a/2", "c/1", "b/2", "a/3"},
		},
		"an emptied lane leaves the turn and comes back last": {
			ops:  []string{"+a/1", "+b/1", "+b/2", "-", "-", "+a/2", "-", "-"},
			want: []string{"a/1", "b/1", "b/2", "a/2"},
		},
		"the cluster lane (no namespace) is one lane like the others": {
			ops:  []string{"+/x", "+/y", "+a/1", "-", "-", "-"},
			want: []string{"/x", "a/1", "/y"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			q := fairqueue.New(laneOf)
			var got []string
			for _, op := range tc.ops {
				if op == "-" {
					got = append(got, q.Pop())
					continue
				}
				q.Push(op[1:])
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
			if q.Len() != 0 {
				t.Errorf("Len() = %d after popping everything", q.Len())
			}
		})
	}
}

// TestRateLimitingQueueIsFair: through client-go's work queue (dedupe,
// processing, delays), a burst of one lane does not hold another's item.
func TestRateLimitingQueueIsFair(t *testing.T) {
	q := fairqueue.NewRateLimiting("", workqueue.DefaultTypedControllerRateLimiter[string](), laneOf)
	defer q.ShutDown()
	for i := range 1000 {
		q.Add("hostile/" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	q.Add("hostile/aa") // deduped
	q.AddAfter("other/1", time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	for i := 0; ; i++ {
		item, _ := q.Get()
		q.Done(item)
		if item == "other/1" {
			if i > 1 {
				t.Errorf("the other lane's item came out after %d of the hostile lane's", i)
			}
			return
		}
	}
}
