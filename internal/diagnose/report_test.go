/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestMarkRoots(t *testing.T) {
	fs := []Finding{{Cause: "A", Severity: SeverityBlocker, Children: []Finding{
		{Cause: "B", Severity: SeverityBlocker, Children: []Finding{{Cause: "C", Severity: SeverityInfo}}},
		{Cause: "D", Severity: SeverityWaiting},
	}}, {Cause: "E", Severity: SeverityWarning}}
	var got []string
	for _, r := range MarkRoots(fs) {
		got = append(got, r.Cause)
	}
	if diff := cmp.Diff([]string{"B"}, got); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}
}

// TestMarkRootsBeside: a running owner's missing right to remove the same
// finalizer sits beside its finding: both are roots. Below another
// finalizer's finding, or another object's, it hides its parent as any
// blocker does.
func TestMarkRootsBeside(t *testing.T) {
	obj := &ObjectRef{Kind: "Bucket", Namespace: "shop", Name: "invoices", UID: "u1"}
	other := &ObjectRef{Kind: "Bucket", Namespace: "shop", Name: "media", UID: "u2"}
	rbac := func(o *ObjectRef, fin string) Finding {
		return Finding{Cause: CauseOwnerLacksRBAC, Severity: SeverityBlocker, Object: o, Finalizer: fin}
	}
	for _, tc := range []struct {
		name  string
		child Finding
		want  []string
	}{
		{"beside", rbac(obj, "f"), []string{CauseOwnerReportsFailure, CauseOwnerLacksRBAC}},
		{"another finalizer", rbac(obj, "g"), []string{CauseOwnerLacksRBAC}},
		{"another object", rbac(other, "f"), []string{CauseOwnerLacksRBAC}},
	} {
		fs := []Finding{{Cause: CauseOwnerReportsFailure, Severity: SeverityBlocker, Object: obj, Finalizer: "f", Children: []Finding{tc.child}}}
		var got []string
		for _, r := range MarkRoots(fs) {
			got = append(got, r.Cause)
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("%s: roots (-want +got):\n%s", tc.name, diff)
		}
	}
}
