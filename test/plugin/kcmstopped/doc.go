/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package kcmstopped holds the kubectl-teardown scenario that stops
// kube-controller-manager mid-test: its Lease, renewing at first, stops
// being renewed, and explain and status must name it as the root cause of
// what only it would remove (the namespace controller's kubernetes token,
// the garbage collector's foregroundDeletion). Its tests start a control
// plane of their own, with leader election on and a 4 s lease.
package kcmstopped
