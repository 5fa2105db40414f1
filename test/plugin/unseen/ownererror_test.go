/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"testing"
	"time"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// Issue 17, family 2: the owner runs and says, in the object's own status,
// that it fails against an external target (a bucket it may not delete, a
// cluster it cannot reach). Its ServiceAccount also lacks the right to
// write the object: a real problem, but a secondary one. Before, the
// denial was the only root blocker and the owner's words a prefix of its
// message; now the owner's failure is the first root blocker, and the
// denial a later one. The negative control: the same owner, an object
// whose conditions report no failure (Ready=False, Deleting), keeps the
// denial as its only root.
func TestOwnerErrorNamesExternalTarget(t *testing.T) {
	needCluster(t)
	now := time.Now().UTC().Format(time.RFC3339)
	cond := func(typ, status, reason, msg string) any {
		c := map[string]any{"type": typ, "status": status, "reason": reason, "lastTransitionTime": now}
		if msg != "" {
			c["message"] = msg
		}
		return c
	}
	// Crossplane v2's namespaced managed resources; the provider runs
	// (crossplane-runtime reports a failed external delete as
	// Synced=False, ReconcileError).
	const xpGroup, xpFin = "s3.aws.m.upbound.io", "finalizer.managedresource.crossplane.io"
	ensureCRD(t, xpGroup, "Bucket", "buckets", "v1beta1")
	xp := plugintest.NewNamespace(t, cs, "crossplane-system")
	operator(t, xp, "provider-aws-s3", "provider-aws-s3", []string{"provider"}, "xpkg.upbound.io/upbound/provider-aws-s3:v2.1.0", 1)
	// Azure Service Operator v2 managing an AKS cluster: Ready=False
	// while deleting, the message naming the cluster it cannot reach.
	const asoGroup, asoFin = "containerservice.azure.com", "serviceoperator.azure.com/finalizer"
	ensureCRD(t, asoGroup, "ManagedCluster", "managedclusters", "v1api20231001")
	aso := plugintest.NewNamespace(t, cs, "azureserviceoperator-system")
	operator(t, aso, "azureserviceoperator-controller-manager", "azureserviceoperator-default", []string{"/manager"}, "mcr.microsoft.com/k8s/azureserviceoperator:v2.9.0", 1)
	ns := plugintest.NewNamespace(t, cs, "tenant")

	for _, tc := range []struct {
		name, group, version, plural, object, fin, manager string
		conditions                                         []any
		// said is what the first root blocker must quote; "" when the
		// denial is the only root (the negative control).
		said string
	}{
		{name: "bucket access denied", group: xpGroup, version: "v1beta1", plural: "buckets", object: "invoices-archive", fin: xpFin, manager: "provider-aws-s3",
			conditions: []any{cond("Ready", "False", "Deleting", ""),
				cond("Synced", "False", "ReconcileError", "delete failed: cannot delete bucket invoices-archive: operation error S3: DeleteBucket, https response error StatusCode: 403, api error AccessDenied: Access Denied")},
			said: "cannot delete bucket invoices-archive: operation error S3: DeleteBucket, https response error StatusCode: 403, api error AccessDenied"},
		{name: "cluster unreachable", group: asoGroup, version: "v1api20231001", plural: "managedclusters", object: "aks-prod-eu", fin: asoFin, manager: "azureserviceoperator-controller-manager",
			conditions: []any{cond("Ready", "False", "Deleting", "cluster aks-prod-eu unreachable: dial tcp 20.50.2.10:443: i/o timeout")},
			said:       "cluster aks-prod-eu unreachable: dial tcp 20.50.2.10:443: i/o timeout"},
		{name: "no failure reported (negative control)", group: asoGroup, version: "v1api20231001", plural: "managedclusters", object: "aks-staging", fin: asoFin, manager: "azureserviceoperator-controller-manager",
			conditions: []any{cond("Ready", "False", "Deleting", "deleting the resource")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			terminatingObject(t, tc.group, tc.version, map[string]string{"buckets": "Bucket", "managedclusters": "ManagedCluster"}[tc.plural], tc.plural, ns, tc.object, tc.manager, []string{tc.fin},
				map[string]any{"location": "westeurope"}, map[string]any{"conditions": tc.conditions})
			rep := explain(t, tc.plural+"."+tc.group+"/"+tc.object, "-n", ns)
			if !rep.Blocked || len(rep.RootBlockers) == 0 {
				t.Fatalf("not blocked; findings:\n%s", dump(rep.Findings))
			}
			first, last := rep.RootBlockers[0], rep.RootBlockers[len(rep.RootBlockers)-1]
			if last.Cause != "OwnerLacksRBAC" {
				t.Errorf("last root blocker %s, want the owner's missing right (OwnerLacksRBAC); roots:\n%s", last.Cause, dump(rep.RootBlockers))
			}
			if tc.said == "" {
				if len(rep.RootBlockers) != 1 {
					t.Errorf("want the denial as the only root blocker; roots:\n%s", dump(rep.RootBlockers))
				}
				return
			}
			if first.Cause != "OwnerReportsFailure" || first.Object == nil || first.Object.Name != tc.object {
				t.Fatalf("first root blocker %s, want OwnerReportsFailure on %s; roots:\n%s", first.Cause, tc.object, dump(rep.RootBlockers))
			}
			mustContain(t, "first root message", first.Message, "the owner says: ", tc.said)
			mustContain(t, "first root remedy", first.Remedy, "fix what the owner reports")
			mustContain(t, "later root message", last.Message, "even once what it reports is fixed it cannot remove")
			out := text(tc.plural+"."+tc.group+"/"+tc.object, "-n", ns).Out
			mustContain(t, "explain", out, "OwnerReportsFailure", tc.said)
		})
	}
}
