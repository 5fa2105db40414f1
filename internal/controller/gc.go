/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the teardown-controller's GOGC: Go's default, 100,
// which lets the heap grow to twice what is live before collecting. Nearly
// all of the controller's live heap is its cache of guarded objects, so its
// memory settles near twice the cache: 1.7 KiB per guarded object since
// objects share their attached records' maps, where 50 (the default until
// then) settles near one and a half times for about twice the collector's
// CPU (docs/performance.md, "Controller CPU per object"). The Deployment's
// GOMEMLIMIT, from the container's limit, bounds it either way.
const DefaultGCPercent = 100

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
