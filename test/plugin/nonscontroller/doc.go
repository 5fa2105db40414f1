/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package nonscontroller holds the kubectl-teardown scenario that needs a
// control plane of its own: kube-controller-manager without the namespace
// controller (catalog cause A11). Its tests start that control plane.
package nonscontroller
