/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package signals reads, from objects already in hand, what the cluster
// says about a stuck deletion, in seven general families (issue 26): the
// object's own "do not proceed" marks (pause.go), the objects that name it
// (references.go), the place where its remover must act (actor.go), which
// running workload is its remover (remover.go), a helper's failure and its
// cause (helper.go), what the owner needs that went with a terminating
// namespace (nsdeadlock.go), and whether the deletion shows evidence of
// progress (progress.go).
//
// Every function is pure: it takes objects (unstructured or typed) and the
// time, and reads nothing from a cluster, so each family is table-tested
// without a client. The engine (internal/diagnose) chooses which objects to
// hand in, from the lists it already holds, and words the findings.
package signals
