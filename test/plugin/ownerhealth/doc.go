/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package ownerhealth holds the kubectl-teardown scenarios of owners that
// run but say why they cannot finish (their status conditions, Warning
// Events, a refused eviction) and of owners installed but unhealthy (a CSI
// driver's controller at 0 ready replicas, a Crossplane Provider not
// Healthy). Its control plane runs the deployment, replicaset and
// disruption controllers besides the garbage collector and the namespace
// controller, so that a Deployment's ready count and a
// PodDisruptionBudget's allowed disruptions are computed for real.
package ownerhealth
