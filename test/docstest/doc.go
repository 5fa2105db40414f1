/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package docstest keeps docs/controller.md and the README's policy section
// true: their YAML examples are created on a real API server with the CRDs
// installed and the teardown-controller running, every policy among them
// must become Ready, the webhook contract's JSON examples must decode into
// the Go types, and the names the controller's contract is made of (Job
// environment and labels, finalizers, reasons, metrics) must appear in the
// documentation. It has no code of its own, only tests.
package docstest
