/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package diagnose is the engine behind `kubectl teardown explain`: it names
// why an object (or a namespace) is stuck in deletion, down to the root
// blocker, with the remedy and what removing a finalizer by hand would leak.
//
// It links no cobra, no cli-runtime and no controller-runtime, so the plugin
// stays lean and the controller can run the same analysis.
//
//   - package kube (kube/): the engine's one access to the API server, a
//     read-only layer with no exported client: every read a getter cached
//     per run (one list per kind and namespace), the server-side dry-runs
//     named in kube/dryrun.go. Explainers of one run share its Cluster.
//     kube/kubefake builds one over client-go's fakes for the unit tier.
//   - engine.go: Explainer, which walks one target's finalizers and asks the
//     catalog for the check of each.
//   - catalog.go: Entry, a well-known finalizer with its id, texts and
//     check; the entries themselves live in the file of their family.
//   - one file per family of causes: namespace.go (A), apiavailability.go
//     (aggregated APIs and webhooks, A1/A2/A5), owner.go (who owns a
//     finalizer and whether it is alive, B1/B2/B5, A8; workloads.go finds
//     the workload or Lease it runs as), rbac.go (B4),
//     removal.go (B3), volumes.go (C1–C6, C11), network.go (C7, C10),
//     pods.go (C8, D1–D3), crd.go (C9), dra.go (C12), nodes.go (D5), gc.go
//     (E1–E3), ownerrefs.go (E4), liveness.go (control-plane liveness),
//     policies.go (Teardown's own policies), thirdparty.go (well-known
//     third-party finalizers), crossplane.go (a managed resource's
//     Crossplane Provider), csi.go (a CSI finalizer's driver and its
//     controller), ownerstatus.go (B2: what the owner says in the object's
//     status or Events), podevents.go (D3 in the kubelet's words),
//     evictions.go (D5: the API server's answer to a dry-run eviction),
//     workloadhealth.go (an owner installed but unhealthy); chains.go
//     (PV → claim → pod followed to the end), operatorns.go (A8 once the
//     operator is gone), stillhere.go (an object whose owner is being
//     deleted), vanished.go (an absent target: its Events and namespace),
//     corrupt.go (F1, objects kube-apiserver cannot read from storage),
//     unreadable.go (F3, any other failed read: the CRD's conversion or
//     the APIService, per version, never the end of the report),
//     platforms.go (a finalizer of a platform of which nothing is
//     installed here: Crossplane, cert-manager, Rancher, the AWS
//     controllers...).
//   - report.go and render.go: the Report (the JSON schema of docs/cli.md)
//     and its human rendering, both pure.
//   - summary.go: status's one-line blockers.
//   - stepwaits.go: what a pending Teardown step waits on (WaitingOn,
//     StepFailed), for the controller's diagnosis: its causes are the
//     engine's, and its pods are judged as workloads' and helpers' are
//     (signals.JudgePod, the one pod judgement).
//
// docs/diagnose.md says how to add a cause.
//
// Why the families stay one package: the catalog is one vocabulary of
// causes, and each family's file holds its entries beside their checks, so
// that adding a cause touches one file; the families share the run's
// reads and the Explainer's walk, and splitting them into packages would
// export that walk to every family. The cluster is cut out (package kube),
// so a family cannot read around the per-run caches and is tested on
// fakes; the report schema on its own is the next cut.
package diagnose
