/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the teardown-controller's GOGC. Go's default, 100,
// lets the heap grow to twice what is live before collecting; nearly all of
// the controller's live heap is its cache of guarded objects, so its memory
// settles near twice the cache. At 50 it settles near one and a half times,
// for more frequent collections (docs/performance.md has both measured).
const DefaultGCPercent = 50

// GCPercentFlag is the command-line flag that sets it.
const GCPercentFlag = "gc-percent"

// SetGCPercent sets the garbage collector's target percentage to percent,
// unless the GOGC environment variable is set: as for any Go program, GOGC
// wins. A negative percent turns the collector off but for GOMEMLIMIT.
func SetGCPercent(percent int) {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(percent)
}
