/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchCounter counts the progress patches written.
type patchCounter struct{ patches []Progress }

func (p *patchCounter) Patch(_ context.Context, _ client.Object, _ types.PatchType, data []byte) error {
	var doc struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	for _, v := range doc.Metadata.Annotations {
		var pr Progress
		if err := json.Unmarshal([]byte(v), &pr); err != nil {
			return err
		}
		p.patches = append(p.patches, pr)
	}
	return nil
}

func (p *patchCounter) Read(context.Context, client.Object) error { return nil }

// TestProgressRecordsAttempts: a cleanup failing again and again with the
// same message gets its attempt count rewritten, at most once per
// progressRewriteAfter, so the record never says "attempts: 1" after ten
// failures; a new state is written at once.
func TestProgressRecordsAttempts(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	c := &patchCounter{}
	f := New(c, WithClock(func() time.Time { return now }))
	obj := &corev1.ConfigMap{}
	prev := Progress{}
	record := func(state State, attempts int) {
		p := Progress{Finalizer: "a.io/x", State: state, Message: "webhook down", Attempts: attempts}
		_ = f.recordProgress(t.Context(), obj, prev, p)
		if n := len(c.patches); n > 0 {
			prev = c.patches[n-1]
		}
	}
	record(StateRetry, 1)
	now = now.Add(time.Second)
	record(StateRetry, 2) // same message, within the throttle: not written
	if len(c.patches) != 1 {
		t.Fatalf("wrote %d records within the throttle, want 1", len(c.patches))
	}
	now = now.Add(progressRewriteAfter)
	record(StateRetry, 10)
	if len(c.patches) != 2 || c.patches[1].Attempts != 10 {
		t.Fatalf("records = %+v, want the second to say 10 attempts", c.patches)
	}
	now = now.Add(time.Second)
	record(StatePending, 11)
	if len(c.patches) != 3 || c.patches[2].State != StatePending {
		t.Fatalf("records = %+v, want a new state written at once", c.patches)
	}
}
