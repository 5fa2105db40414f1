/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"testing"
	"time"

	"github.com/teardown-dev/teardown/internal/inuse"
)

func TestUnusedMessagesChanged(t *testing.T) {
	var m unusedMessages
	w := inuse.Waiter{}
	now := time.Now()
	for i, step := range []struct {
		msg  string
		want bool
	}{{"2 pods", true}, {"2 pods", false}, {"1 pod", true}, {"1 pod", false}} {
		if got := m.changed(w, step.msg, now); got != step.want {
			t.Errorf("call %d (%q): changed = %v, want %v", i, step.msg, got, step.want)
		}
	}
	m.forget(w)
	if !m.changed(w, "1 pod", now) {
		t.Error("a forgotten target's message did not count as changed")
	}
}
