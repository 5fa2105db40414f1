/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"
	"time"
)

// TestLeaderLeaseNamedAfterTheComponent: a running owner's liveness is read
// where it keeps it, a Lease named after the component, not the binary,
// found by its holder (signals.LeasesOf; knative/serving#15321's shape):
// left unrenewed past twice its duration by a pod that is gone, the ready
// replicas do not lead, OwnerNotLeading; renewed a few seconds ago, the
// owner leads and nothing is blamed on the Lease.
func TestLeaderLeaseNamedAfterTheComponent(t *testing.T) {
	ago := func(d time.Duration) string { return familyNow.Add(-d).Format("2006-01-02T15:04:05.000000Z07:00") }
	target := `{apiVersion: buckets.example.io/v1, kind: Bucket, metadata: {name: photos, namespace: shop, uid: b-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [buckets.example.io/cleanup]}}`
	lease := func(renewed time.Duration) string {
		return `{apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {name: bucket-controller-leader, namespace: operators}, spec: {holderIdentity: operator-7d9f5c-abcde_1f2e, leaseDurationSeconds: 15, renewTime: "` + ago(renewed) + `"}}`
	}
	cases := map[string]struct {
		cluster []string
		want    string
	}{
		"unrenewed for 10 minutes, its holder gone": {cluster: []string{lease(10 * time.Minute)}, want: CauseOwnerNotLeading + " Lease operators/bucket-controller-leader"},
		"renewed 5 seconds ago":                     {cluster: []string{lease(5 * time.Second)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rep := explainThread(t, threadScenario{target: target, resource: "buckets", cluster: tc.cluster, operator: true})
			got := ""
			WalkFindings(rep.Findings, func(f *Finding) {
				if f.Cause == CauseOwnerNotLeading && got == "" {
					got = f.Cause + " " + f.Object.String()
				}
			})
			if got != tc.want {
				t.Errorf("OwnerNotLeading finding = %q, want %q (root causes %v)", got, tc.want, rootCauses(rep))
			}
		})
	}
}
