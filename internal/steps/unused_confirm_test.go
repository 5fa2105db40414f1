/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestWaitUnusedGrace: the confirming list starts no sooner than the grace
// after the deletion (counted from the second after the recorded
// deletionTimestamp, which is truncated), never more than one grace from
// now, and not at all without the webhook or for an object already gone.
func TestWaitUnusedGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	secret := func(deleted time.Time) client.Object {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "shop", Finalizers: []string{"teardown.dev/x"}}}
		if !deleted.IsZero() {
			s.DeletionTimestamp = &metav1.Time{Time: deleted}
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		grace time.Duration
		obj   client.Object
		// later is how far the controller's clock is past now.
		later    time.Duration
		min, max time.Duration
	}{
		{name: "deleted just now: a full grace", grace: grace, obj: secret(now), min: grace, max: grace + 200*time.Millisecond},
		// The timestamp is kept to the second (the fake client truncates
		// it as the API server does): counted from the second after it.
		{name: "deleted a second and most of the grace ago: the rest", grace: grace, obj: secret(now),
			later: time.Second + grace - 100*time.Millisecond, min: 100 * time.Millisecond, max: 250 * time.Millisecond},
		{name: "deleted long ago: no wait", grace: grace, obj: secret(now.Add(-time.Minute)), max: 100 * time.Millisecond},
		{name: "gone: no wait", grace: grace, max: 100 * time.Millisecond},
		{name: "without the webhook: no wait", obj: secret(now), max: 100 * time.Millisecond},
		{name: "a clock behind the API server's: one grace at most", grace: grace, obj: secret(now.Add(time.Minute)), min: grace, max: grace + 200*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme.Scheme)
			if tc.obj != nil {
				b = b.WithObjects(tc.obj)
			}
			c := b.Build()
			r := &Runner{Client: c, Reader: c, UnusedGrace: tc.grace, Now: func() time.Time { return now.Add(tc.later) }}
			start := time.Now()
			if err := r.waitUnusedGrace(t.Context(), schema.GroupKind{Kind: "Secret"}, "shop", "creds"); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < tc.min || took > tc.max {
				t.Errorf("waited %s, want between %s and %s", took, tc.min, tc.max)
			}
		})
	}

	t.Run("the attempt's end stops the wait", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(secret(now)).Build()
		r := &Runner{Client: c, Reader: c, UnusedGrace: time.Hour, Now: func() time.Time { return now }}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if err := r.waitUnusedGrace(ctx, schema.GroupKind{Kind: "Secret"}, "shop", "creds"); err == nil {
			t.Fatal("no error when the attempt ended during the wait")
		}
	})
}
