/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"runtime/debug"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestSetGCPercent: the flag sets GOGC, unless the GOGC variable is set.
func TestSetGCPercent(t *testing.T) {
	testenv.SkipShort(t)
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	cases := map[string]struct {
		env  string
		want int
	}{
		"no GOGC variable": {env: "", want: 37},
		"GOGC variable":    {env: "80", want: 100},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			debug.SetGCPercent(100)
			t.Setenv("GOGC", tc.env)
			SetGCPercent(37)
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GOGC after SetGCPercent(37) = %d, want %d", got, tc.want)
			}
		})
	}
}
