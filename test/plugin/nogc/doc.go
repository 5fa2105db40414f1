/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package nogc holds the kubectl-teardown scenarios that need a control
// plane of its own: kube-controller-manager without the garbage collector
// (catalog cause E2). Its tests start that control plane.
package nogc
