/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package chaos holds tests of Teardown's promise, that no guarded object
// goes before its cleanup succeeded, with the teardown-controller run as a
// separate process on a real control plane: killed with SIGKILL, restarted,
// run as two replicas with leader election, while kube-apiserver restarts
// and users edit objects and policies mid-teardown.
//
// TestChaos deletes TEARDOWN_CHAOS_N guarded objects (200 by default; make
// chaos runs 1,000) and prints what it did and measured; TEARDOWN_CHAOS_SEED
// replays a run; TEARDOWN_CHAOS_APISERVER_STOP=graceful stops kube-apiserver
// with SIGTERM instead of SIGKILL. TEARDOWN_CHAOS_LOGS keeps the controllers'
// logs in that folder. TEARDOWN_CONTROLLER_BIN runs a prebuilt controller instead
// of building ./cmd/teardown-controller, for example one of an older commit.
package chaos
