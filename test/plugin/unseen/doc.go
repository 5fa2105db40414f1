/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package unseen holds kubectl-teardown scenarios of stuck deletions taken
// from real issue threads that the diagnosis was not built case by case
// for (issue 20): objects that cannot be read (a CRD's conversion webhook
// or stored versions), owners found by who removes the finalizer rather
// than by product name, and live owners waiting on something else. Each
// test cites its thread. They decode explain's JSON into their own types,
// so that the same files run against older versions of the engine:
// docs/diagnose.md reports the share each version gets right.
package unseen
