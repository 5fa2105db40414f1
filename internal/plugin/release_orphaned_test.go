/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// release --orphaned (issue 29, the safe bulk release of a namespace):
// only the finalizers explain finds owned by nothing are released, each
// with its evidence, dry-run and audit record; a finalizer whose owner
// runs, in the same namespace, is listed as left alone and never touched.
// Without --yes nothing changes.
func TestReleaseOrphaned(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	const orphan, owned = "nobody.teardown.invalid/stale", "cnrm.cloud.google.com/finalizer"
	runningDeployment(t, ns, "cnrm-controller-manager", "cnrm")
	// The suite keeps its namespaces: a running Config Connector left here
	// would be found as the owner of other tests' objects.
	t.Cleanup(func() {
		_ = cs.AppsV1().Deployments(ns).Delete(context.Background(), "cnrm-controller-manager", metav1.DeleteOptions{})
	})
	stuckConfigMap(t, ns, "a", orphan)
	stuckConfigMap(t, ns, "b", orphan)
	stuckConfigMap(t, ns, "owned", owned)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	finalizers := func(name string) []string {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return nil // gone
		}
		return cm.Finalizers
	}

	r := cli(t, "", nil, "release", "--orphaned", "-n", ns, "--reason", "leftovers", "--audit-log", audit)
	if r.code != ExitOK || !strings.Contains(r.out, "2 finalizer(s) owned by nothing") || !strings.Contains(r.out, "Dry-run: nothing changed") {
		t.Fatalf("release --orphaned (dry-run): exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	for _, name := range []string{"a", "b", "owned"} {
		if len(finalizers(name)) != 1 {
			t.Errorf("%s changed by a dry-run: %v", name, finalizers(name))
		}
	}

	r = cli(t, "", nil, "release", "--orphaned", "-n", ns, "--reason", "leftovers", "--yes", "--audit-log", audit)
	if r.code != ExitOK || !strings.Contains(r.out, "Released 2 of 2") {
		t.Fatalf("release --orphaned --yes: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	if finalizers("a") != nil || finalizers("b") != nil {
		t.Errorf("the orphaned objects are still there: a %v, b %v", finalizers("a"), finalizers("b"))
	}
	if f := finalizers("owned"); !slices.Equal(f, []string{owned}) {
		t.Errorf("the finalizer of a running owner was touched: %v", f)
	}
	recs := readAudit(t, audit)
	if len(recs) != 2 || recs[0].Result != "applied" || recs[0].Evidence == nil || recs[0].Evidence.Cause != "OrphanFinalizer" || recs[0].DryRun == nil || !recs[0].DryRun.Allowed {
		t.Errorf("audit records = %+v", recs)
	}

	for _, args := range [][]string{
		{"release", "--orphaned", "configmap/owned", "-n", ns, "--reason", "r"},
		{"release", "--orphaned", "-n", ns, "--finalizer", owned, "--reason", "r"},
		{"release", "--orphaned", "-n", ns},
	} {
		if r := cli(t, "", nil, args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want a usage error\n%s", args, r.code, r.err)
		}
	}
}
