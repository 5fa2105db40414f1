/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package admission checks the ValidatingAdmissionPolicy that protects
// Teardown's finalizers (config/admission) against a real API server: the
// policy and its binding, as `kubectl kustomize config/default` builds them,
// are installed into a local control plane (internal/testenv), and blind
// removals must be refused while the controller, a recorded release and
// `kubectl teardown release` get through. It also checks that the
// controller's metrics, as main serves them by default, need the shipped
// metrics-reader role. It has no code of its own, only tests;
// docs/admission.md describes both.
package admission
