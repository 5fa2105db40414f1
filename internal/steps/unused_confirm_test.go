/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUnusedGraceLeft: the confirming list starts no sooner than the grace
// after the deletion (counted from the second after the recorded
// deletionTimestamp, which is truncated) and after the in-use webhook's
// configuration covered the namespace, never more than one grace from now,
// and not at all without the webhook or for an object not being deleted.
func TestUnusedGraceLeft(t *testing.T) {
	const grace = 3 * time.Second
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	secret := func(deleted time.Time) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "shop"}}
		if !deleted.IsZero() {
			s.DeletionTimestamp = &metav1.Time{Time: deleted}
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		grace time.Duration
		obj   *corev1.Secret
		// later is how far the controller's clock is past now.
		later time.Duration
		// covered is when the webhook's configuration covered the
		// namespace; zero when no coverage applies.
		covered time.Time
		want    time.Duration
	}{
		{name: "deleted just now: a full grace", grace: grace, obj: secret(now), want: grace},
		{name: "deleted a second and most of the grace ago: the rest", grace: grace, obj: secret(now), later: time.Second + grace - 100*time.Millisecond, want: 100 * time.Millisecond},
		{name: "deleted long ago: no wait", grace: grace, obj: secret(now.Add(-time.Minute))},
		{name: "not being deleted: no wait", grace: grace, obj: secret(time.Time{})},
		{name: "without the webhook: no wait", obj: secret(now)},
		{name: "a clock behind the API server's: one grace at most", grace: grace, obj: secret(now.Add(time.Minute)), want: grace},
		{name: "covered long before the deletion: counted from the deletion", grace: grace, obj: secret(now), covered: now.Add(-time.Hour), want: grace},
		{name: "covered after the deletion: a full grace from the coverage", grace: grace, obj: secret(now.Add(-time.Minute)), covered: now, want: grace},
		{name: "covered 2s after the deletion, 1s ago: the rest from the coverage", grace: grace, obj: secret(now.Add(-3 * time.Second)), covered: now.Add(-time.Second), want: grace - time.Second},
		{name: "covered more than a grace ago: no wait", grace: grace, obj: secret(now.Add(-time.Minute)), covered: now.Add(-grace - time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{UnusedGrace: tc.grace, Now: func() time.Time { return now.Add(tc.later) }}
			if got := r.unusedGraceLeft(tc.obj, tc.covered); got != tc.want {
				t.Errorf("unusedGraceLeft = %s, want %s", got, tc.want)
			}
		})
	}
}
