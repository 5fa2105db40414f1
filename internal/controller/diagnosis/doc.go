/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package diagnosis is the controller's proactive diagnosis: a leader-only
// runnable (Diagnoser) that runs the engine of internal/diagnose on the
// guarded objects terminating longer than --diagnose-after, and hands what
// it finds to the policy controller's status (through its Diagnoses
// interface), to Events and to the teardown_blocked_objects gauge. It was
// part of the policy controller's package; it shares nothing with it but
// that interface.
package diagnosis
