/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// annotationsTooLong is what the API server answers a write that takes an
// object's annotations past 256 KiB.
func annotationsTooLong() error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", field.ErrorList{
		field.TooLong(field.NewPath("metadata", "annotations"), "", 262144),
	})
}

func TestRefused(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"annotations too long (422 naming the field)": {err: annotationsTooLong(), want: true},
		"wrapped": {err: fmt.Errorf("patching: %w", annotationsTooLong()), want: true},
		"a guarded patch's failed test (422 naming no field)": {
			err: apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "testing value /metadata/finalizers failed: test failed", 0, false)},
		"422 from an unexpected response": {
			err: apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", gr, "x", "garbled", 0, true)},
		"413":                         {err: apierrors.NewRequestEntityTooLargeError("limit is 3145728"), want: true},
		"past etcd's limit (500)":     {err: apierrors.NewInternalError(errors.New("etcdserver: request is too large")), want: true},
		"past the gRPC limit (500)":   {err: apierrors.NewInternalError(errors.New("trying to send message larger than max (2097152 vs. 2097152)")), want: true},
		"another internal error":      {err: apierrors.NewInternalError(errors.New("boom"))},
		"conflict":                    {err: apierrors.NewConflict(gr, "x", errors.New("changed"))},
		"unavailable":                 {err: apierrors.NewServiceUnavailable("later")},
		"too many requests":           {err: apierrors.NewTooManyRequests("later", 1)},
		"timeout":                     {err: apierrors.NewServerTimeout(gr, "patch", 1)},
		"forbidden":                   {err: apierrors.NewForbidden(gr, "x", errors.New("no"))},
		"not found":                   {err: apierrors.NewNotFound(gr, "x")},
		"a connection error":          {err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")},
		"the caller's context":        {err: context.DeadlineExceeded},
		"no error":                    {},
		"already a RefusedError, too": {err: &RefusedError{Write: WriteAttach, Object: "x", Err: annotationsTooLong()}, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Refused(tc.err); got != tc.want {
				t.Errorf("Refused(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestRefusalMessage(t *testing.T) {
	if got, want := RefusalMessage(annotationsTooLong()), "metadata.annotations: Too long: may not be more than 262144 bytes"; got != want {
		t.Errorf("RefusalMessage = %q, want %q", got, want)
	}
	long := apierrors.NewInternalError(errors.New("etcdserver: request is too large " + strings.Repeat("x", 1000)))
	if got := RefusalMessage(long); len(got) > maxRefusalMessage+len("…") {
		t.Errorf("RefusalMessage of a long answer is %d bytes, want at most %d", len(got), maxRefusalMessage)
	}
}

// refusingClient answers every patch of type refuse with err, and applies
// the others to obj's finalizers as the API server would (enough for Add).
type refusingClient struct {
	refuse  types.PatchType
	err     error
	patches int
}

func (c *refusingClient) Patch(_ context.Context, _ client.Object, pt types.PatchType, _ []byte) error {
	c.patches++
	if pt == c.refuse {
		return c.err
	}
	return nil
}

func (c *refusingClient) Read(context.Context, client.Object) error { return nil }

// TestReconcileSaysRefusedWrites: a refused attach patch is returned as a
// RefusedError at once (not retried as a race), and a refused progress
// record comes back in Outcome.Refused; each is counted every time and
// announced by one Warning Event per object.
func TestReconcileSaysRefusedWrites(t *testing.T) {
	const key = "refused.example.com/k"
	obj := func(deleting bool) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "full", UID: "uid-1"}}
		if deleting {
			now := metav1.Now()
			cm.DeletionTimestamp = &now
			cm.Finalizers = []string{key}
		}
		return cm
	}
	pending := HandlerFunc(func(context.Context, client.Object) Result { return Pending(time.Minute, "waiting") })

	t.Run("attach", func(t *testing.T) {
		c := &refusingClient{refuse: types.JSONPatchType, err: annotationsTooLong()}
		rec := events.NewFakeRecorder(10)
		f := New(c, WithEventRecorder(rec), WithAttachedBy("policy-uid"))
		if err := f.Register(key, pending); err != nil {
			t.Fatal(err)
		}
		before := refusedCount(t, key, WriteAttach)
		for range 2 {
			_, err := f.Reconcile(t.Context(), obj(false))
			if !IsRefused(err) {
				t.Fatalf("Reconcile error = %v, want a RefusedError", err)
			}
		}
		if c.patches != 2 {
			t.Errorf("%d patches for two reconciles, want 2: a refusal is not a race to retry", c.patches)
		}
		if got := refusedCount(t, key, WriteAttach) - before; got != 2 {
			t.Errorf("writes_refused_total{write=attach} grew by %v, want 2", got)
		}
		if got := drain(rec.Events); len(got) != 1 || !strings.Contains(got[0], ReasonAttachRefused) || !strings.Contains(got[0], "Too long") {
			t.Errorf("Events = %q, want one %s saying why", got, ReasonAttachRefused)
		}
	})

	t.Run("progress", func(t *testing.T) {
		c := &refusingClient{refuse: types.MergePatchType, err: annotationsTooLong()}
		rec := events.NewFakeRecorder(10)
		f := New(c, WithEventRecorder(rec))
		if err := f.Register(key, pending); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			out, err := f.Reconcile(t.Context(), obj(true))
			if err != nil {
				t.Fatal(err)
			}
			if !IsRefused(out.Refused) || out.RequeueAfter == 0 || len(out.Removed) != 0 {
				t.Fatalf("Outcome = %+v, want still pending, with Refused set", out)
			}
		}
		if got := drain(rec.Events); len(got) != 1 || !strings.Contains(got[0], ReasonProgressRefused) {
			t.Errorf("Events = %q, want one %s", got, ReasonProgressRefused)
		}
	})

	t.Run("a transient failure is no refusal", func(t *testing.T) {
		c := &refusingClient{refuse: types.MergePatchType, err: apierrors.NewServiceUnavailable("later")}
		f := New(c)
		if err := f.Register(key, pending); err != nil {
			t.Fatal(err)
		}
		out, err := f.Reconcile(t.Context(), obj(true))
		if err != nil || out.Refused != nil {
			t.Errorf("Reconcile = %+v, %v; want pending with nothing refused", out, err)
		}
	})
}

func drain(ch chan string) []string {
	var got []string
	for {
		select {
		case e := <-ch:
			got = append(got, e)
		default:
			return got
		}
	}
}

// refusedCount reads teardown_finalizer_writes_refused_total.
func refusedCount(t *testing.T, key, write string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "teardown_finalizer_writes_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["finalizer"] == key && labels["write"] == write {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
