/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/lease"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestAhead: a record is ahead of a writer when a newer leader wrote it, or
// the same leader under a newer generation of the same policy; a record of
// the previous release (no epoch, no generation) never is.
func TestAhead(t *testing.T) {
	pol := &policy.Policy{UID: "p", Generation: 4}
	at := func(transitions int64) lease.Epoch { return lease.Epoch{Lease: "u", Transitions: transitions} }
	cases := map[string]struct {
		rec   record
		epoch lease.Epoch
		want  bool
	}{
		"newer leader":                        {rec: record{Policy: "p", Generation: 4, Lease: "u", Epoch: 3}, epoch: at(2), want: true},
		"newer leader, older generation":      {rec: record{Policy: "p", Generation: 1, Lease: "u", Epoch: 3}, epoch: at(2), want: true},
		"older leader, newer generation":      {rec: record{Policy: "p", Generation: 9, Lease: "u", Epoch: 1}, epoch: at(2), want: false},
		"same leader, newer generation":       {rec: record{Policy: "p", Generation: 5, Lease: "u", Epoch: 2}, epoch: at(2), want: true},
		"same leader, same generation":        {rec: record{Policy: "p", Generation: 4, Lease: "u", Epoch: 2}, epoch: at(2), want: false},
		"same leader, older generation":       {rec: record{Policy: "p", Generation: 3, Lease: "u", Epoch: 2}, epoch: at(2), want: false},
		"same leader, another policy":         {rec: record{Policy: "q", Generation: 9, Lease: "u", Epoch: 2}, epoch: at(2), want: false},
		"another Lease's leader":              {rec: record{Policy: "p", Generation: 4, Lease: "v", Epoch: 9}, epoch: at(2), want: false},
		"a leader, read without election":     {rec: record{Policy: "p", Generation: 4, Lease: "u", Epoch: 9}, epoch: lease.Epoch{}, want: false},
		"no election, newer generation":       {rec: record{Policy: "p", Generation: 5}, epoch: lease.Epoch{}, want: true},
		"previous release's record":           {rec: record{Policy: "p"}, epoch: lease.Epoch{}, want: false},
		"previous release's record, election": {rec: record{Policy: "p"}, epoch: at(7), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ahead(tc.rec, tc.epoch, pol); got != tc.want {
				t.Errorf("ahead(%+v, %+v, generation %d) = %v, want %v", tc.rec, tc.epoch, pol.Generation, got, tc.want)
			}
		})
	}
}

// leaseLock is a leader-election lock whose writes always succeed.
type leaseLock struct{ resourcelock.Interface }

func (leaseLock) Identity() string                                                { return "me" }
func (leaseLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return nil }

// gateAt returns a Gate open for an hour under epoch.
func gateAt(t *testing.T, epoch int) *lease.Gate {
	t.Helper()
	g := lease.NewGate(time.Hour)
	uid := func(context.Context) (string, error) { return "lease-uid", nil }
	if err := g.Lock(leaseLock{}, uid).Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: "me", LeaderTransitions: epoch}); err != nil {
		t.Fatal(err)
	}
	return g
}

// apiServerTests answers a failed JSON patch test as the API server does
// (422), where the fake client returns json-patch's own error.
var apiServerTests = interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := c.Patch(ctx, obj, patch, opts...)
	if err != nil && !apierrors.IsNotFound(err) && apierrors.ReasonForError(err) == metav1.StatusReasonUnknown {
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{}, obj.GetName(), err.Error(), 0, false)
	}
	return err
}}

// TestFencedRun: a cleanup runs no step, and writes nothing, on an object
// whose record a newer leader or a newer version wrote; it claims a record
// an older leader (or the previous release) wrote before it runs a step,
// resuming where that record says; and a record that changed since it was
// read stops it before the next step.
func TestFencedRun(t *testing.T) {
	rc := newReceiver(t, map[string]string{"a": answerSuccess, "b": answerSuccess, "c": answerInProgress})
	a, b, c := rc.step("a", teardownv1alpha1.FailureRetry), rc.step("b", teardownv1alpha1.FailureRetry), rc.step("c", teardownv1alpha1.FailureRetry)
	since := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	at := func(pol *policy.Policy, i int, generation, epoch int64) record {
		rec := record{Object: "target-uid", Policy: pol.UID, Fingerprint: pol.Fingerprint, Step: i, Name: pol.Steps[i].Name,
			Since: since, Generation: generation, Epoch: epoch}
		if epoch > 0 {
			rec.Lease = "lease-uid"
		}
		return rec
	}
	const epoch, generation = 3, 2
	cases := map[string]struct {
		stored record
		// read, when set, is the (stale) record the cleanup reads.
		read      *record
		wantState finalizer.State
		wantErr   error
		wantCalls []string
		// want is the record the API holds after the run.
		want record
	}{
		"newer leader's record": {
			stored: record{Step: 2, Generation: generation, Epoch: epoch + 1}, wantState: finalizer.StateRetry, wantErr: finalizer.ErrSuperseded,
			want: record{Step: 2, Generation: generation, Epoch: epoch + 1},
		},
		"newer version's record, same leader": {
			stored: record{Step: 0, Generation: generation + 1, Epoch: epoch}, wantState: finalizer.StateRetry, wantErr: finalizer.ErrSuperseded,
			want: record{Step: 0, Generation: generation + 1, Epoch: epoch},
		},
		"older leader's record": {
			stored: record{Step: 2, Generation: generation, Epoch: epoch - 1}, wantState: finalizer.StatePending, wantCalls: []string{"c"},
			want: record{Step: 2, Generation: generation, Epoch: epoch},
		},
		"previous release's record": {
			stored: record{Step: 2}, wantState: finalizer.StatePending, wantCalls: []string{"c"},
			want: record{Step: 2, Generation: generation, Epoch: epoch},
		},
		"record moved on since it was read": {
			stored: record{Step: 2, Generation: generation, Epoch: epoch}, read: &record{Step: 0, Generation: generation, Epoch: epoch},
			wantState: finalizer.StatePending, wantErr: nil, wantCalls: []string{"a"},
			want: record{Step: 2, Generation: generation, Epoch: epoch},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, apiServerTests)
			f.runner.Lease = gateAt(t, epoch)
			pol := newPolicy(t, "policy-uid", a, b, c)
			pol.Generation = generation
			fill := func(r record) record { return at(pol, r.Step, r.Generation, r.Epoch) }
			store(t, f, fill(tc.stored))
			if tc.read != nil {
				f.setState(t, string(mustJSON(t, fill(*tc.read))))
			}
			rc.takeCalls()
			res := f.run(t, pol)
			if res.State != tc.wantState || tc.wantErr != nil && !errors.Is(res.Err, tc.wantErr) {
				t.Fatalf("run = %s (%v), want %s (%v)", res.State, res.Err, tc.wantState, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantCalls, rc.takeCalls()); diff != "" {
				t.Errorf("steps run, -want +got:\n%s", diff)
			}
			got := f.stored(t)
			if diff := cmp.Diff(fill(tc.want), got); diff != "" {
				t.Errorf("stored record, -want +got:\n%s", diff)
			}
		})
	}
}

// TestGuardTests: the finalizer's removals and progress records test the
// record as read, and are refused when it is ahead of the writer.
func TestGuardTests(t *testing.T) {
	f := newFixture(t, apiServerTests)
	f.runner.Lease = gateAt(t, 3)
	pol := newPolicy(t, "policy-uid", teardownv1alpha1.Step{Name: "a"})
	guard := f.runner.Guard(pol)

	tests, err := guard.Tests(f.target.Obj, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]finalizer.Test{{Path: "/metadata/annotations"}}, tests); diff != "" {
		t.Errorf("no annotations: tests, -want +got:\n%s", diff)
	}
	rec := record{Object: "target-uid", Policy: pol.UID, Fingerprint: pol.Fingerprint, Name: "a", Since: time.Unix(1, 0).UTC(), Lease: "lease-uid", Epoch: 2}
	store(t, f, rec)
	tests, err = guard.Tests(f.target.Obj, testKey)
	if err != nil {
		t.Fatal(err)
	}
	want := []finalizer.Test{{Path: "/metadata/annotations/steps.teardown.dev~1ns.teardown.dev_p", Value: string(mustJSON(t, rec))}}
	if diff := cmp.Diff(want, tests); diff != "" {
		t.Errorf("an older leader's record: tests, -want +got:\n%s", diff)
	}
	rec.Epoch = 4
	store(t, f, rec)
	if _, err := guard.Tests(f.target.Obj, testKey); !errors.Is(err, finalizer.ErrSuperseded) {
		t.Errorf("a newer leader's record: err = %v, want ErrSuperseded", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// store writes rec as the target's record in the fake API (and the
// fixture's copy).
func store(t *testing.T, f *fixture, rec record) {
	t.Helper()
	patch := mustJSON(t, map[string]any{"metadata": map[string]any{"annotations": map[string]string{StateAnnotation(testKey): string(mustJSON(t, rec))}}})
	if err := f.client.Patch(t.Context(), f.target.Obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// stored reads the target's record from the fake API.
func (f *fixture) stored(t *testing.T) record {
	t.Helper()
	obj := f.target.Obj.DeepCopyObject().(client.Object)
	if err := f.client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	rec, ok := Records{}.bound(obj, testKey)
	if !ok {
		t.Fatalf("no record on %s", obj.GetName())
	}
	return rec
}
