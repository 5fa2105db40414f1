/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package kube is the diagnosis engine's one access to the API server: a
// read-only view of one cluster for one run (a command, a reconcile).
//
// Every read is a getter that lists a kind once per run and namespace (or
// reads one object once) and shares the result between every object the run
// explains, so the engine's cost holds by construction: its families reach
// the cluster only through these getters, never through a client. The
// clients are unexported; the only requests that are not reads are the
// server-side dry-runs of dryrun.go and the SubjectAccessReviews of
// access.go, which change nothing.
//
// A Cluster is built from client interfaces (New), so client-go's fakes can
// stand in for the API server (package kubefake), or from a REST config
// (NewForConfig).
//
//   - cluster.go: Cluster, its constructors, the per-run memo (Memo) and the
//     kind mapping.
//   - resources.go: discovery of the listable kinds.
//   - meta.go: metadata-only lists (whole namespaces, one kind, ConfigMaps).
//   - objects.go: whole objects of any kind (dynamic), CRDs, APIServices.
//   - lists.go: the typed lists the families read (pods, nodes, Jobs,
//     Leases, Events, claims, volumes, budgets, webhooks, workloads...).
//   - access.go: SubjectAccessReviews, cached per question.
//   - dryrun.go: the server-side dry-runs, each named for what it tries.
//   - clock.go: the API server's clock, from the Date of its answers.
package kube
