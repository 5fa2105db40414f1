/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/recordseal"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func testKeys(t *testing.T, since time.Time, ids ...string) *recordseal.Keyring {
	t.Helper()
	keys := map[string][]byte{}
	for i, id := range ids {
		keys[id] = bytes.Repeat([]byte{byte(i + 1)}, 32)
	}
	k, err := recordseal.New(keys, since)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSealedRecords: with keys, a step record proves who started a
// teardown only when its seal checks: one the controller sealed does; the
// same record written by anyone else (no seal), edited, copied to another
// object or to another key, or sealed under a key the controller does not
// hold, does not, whatever it says. A record without a seal on an object
// created before records were sealed (the previous release's) still does,
// and what a rotated-out-of-use key sealed still checks while the key is
// kept.
func TestSealedRecords(t *testing.T) {
	sealedSince := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	keys := testKeys(t, sealedSince, "2026-11-01")
	const key = "example.com/k"
	genuine := record{Object: "obj-uid", Policy: "p-uid", Fingerprint: "f", Step: 1, Name: "b", Since: sealedSince.Add(time.Hour)}
	sealed := func(rec record, k *recordseal.Keyring, under string) string {
		rec, err := rec.sealed(k, under)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rec)
		return string(b)
	}
	created := func(at time.Time) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{UID: "obj-uid", CreationTimestamp: metav1.NewTime(at)}
	}
	later, earlier := sealedSince.Add(time.Minute), sealedSince.Add(-time.Minute)
	edited := genuine
	edited.Policy = "other-policy"
	cases := map[string]struct {
		obj    *metav1.ObjectMeta
		record string
		want   bool
	}{
		"sealed by the controller":            {created(later), sealed(genuine, keys, key), true},
		"no seal (a forgery)":                 {created(later), sealed(genuine, nil, key), false},
		"no seal, object older than the keys": {created(earlier), sealed(genuine, nil, key), true},
		// Timestamps are whole seconds: an object stamped with the keys'
		// second may be older than they are (CI's TestUpgradeMidTeardown
		// stranded one such teardown).
		"no seal, object created in the keys' second": {created(sealedSince), sealed(genuine, nil, key), true},
		"no seal, object created the second after":    {created(sealedSince.Add(time.Second)), sealed(genuine, nil, key), false},
		"sealed, object older than the keys":          {created(earlier), sealed(genuine, keys, key), true},
		"another key's record":                        {created(later), sealed(genuine, keys, "example.com/other"), false},
		"under a key the controller does not hold":    {created(later), sealed(genuine, testKeys(t, sealedSince, "2026-11-01", "2026-12-01"), key), false},
		"the seal of another policy's record":         {created(later), strings.Replace(sealed(genuine, keys, key), `"p-uid"`, `"other-policy"`, 1), false},
		"another record's seal": {created(later), func() string {
			var rec record
			_ = json.Unmarshal([]byte(sealed(genuine, keys, key)), &rec)
			e := edited
			e.Seal = rec.Seal
			b, _ := json.Marshal(e)
			return string(b)
		}(), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.obj.Annotations = map[string]string{StateAnnotation(key): tc.record}
			uid, ok := Records{Keys: keys}.StartedBy(tc.obj, key)
			if ok != tc.want || ok && uid != "p-uid" {
				t.Errorf("StartedBy = %q, %v; want proven %v", uid, ok, tc.want)
			}
			// Without keys every record bound to its object reads as before.
			if _, ok := (Records{}).StartedBy(tc.obj, key); !ok && strings.Contains(tc.record, `"object":"obj-uid"`) {
				t.Error("without keys a bound record is not read")
			}
		})
	}

	// A copy to another object carries the other object's UID in its
	// object field, which the seal covers.
	copied := &metav1.ObjectMeta{UID: "copy-uid", CreationTimestamp: metav1.NewTime(later), Annotations: map[string]string{
		StateAnnotation(key): strings.Replace(sealed(genuine, keys, key), `"obj-uid"`, `"copy-uid"`, 1)}}
	if _, ok := (Records{Keys: keys}).StartedBy(copied, key); ok {
		t.Error("a sealed record copied to another object proves something")
	}

	// Rotation: a ring with a newer key still checks the older one's seals.
	rotated := testKeys(t, sealedSince, "2026-11-01", "2026-12-01")
	obj := created(later)
	obj.Annotations = map[string]string{StateAnnotation(key): sealed(genuine, keys, key)}
	if _, ok := (Records{Keys: rotated}).StartedBy(obj, key); !ok {
		t.Error("after rotation, a record the older key sealed proves nothing")
	}
}

// TestRunnerSealsAndIgnoresForgeries: a runner with keys seals the records
// it writes (a restart resumes from them), and a forged record that names
// this very policy and version at its last step, but carries no seal,
// restarts the cleanup from its first step and is replaced by a sealed one.
func TestRunnerSealsAndIgnoresForgeries(t *testing.T) {
	rc := newReceiver(t, map[string]string{"a": answerSuccess, "b": answerInProgress})
	a, b := rc.step("a", teardownv1alpha1.FailureRetry), rc.step("b", teardownv1alpha1.FailureRetry)
	keys := testKeys(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "k1")

	f := newFixture(t, interceptor.Funcs{})
	f.runner.Records = Records{Keys: keys}
	pol := newPolicy(t, "policy-uid", a, b)
	if res := f.run(t, pol); res.State != finalizer.StatePending {
		t.Fatalf("first run: %s", res.State)
	}
	rec := f.stored(t)
	if !strings.HasPrefix(rec.Seal, "k1.") {
		t.Fatalf("the record written is not sealed: %+v", rec)
	}
	if diff := cmp.Diff([]string{"a", "b"}, rc.takeCalls()); diff != "" {
		t.Fatalf("first run, -want +got:\n%s", diff)
	}
	if res := f.run(t, pol); res.State != finalizer.StatePending {
		t.Fatalf("second run: %s", res.State)
	}
	if diff := cmp.Diff([]string{"b"}, rc.takeCalls()); diff != "" {
		t.Errorf("a sealed record does not resume, -want +got:\n%s", diff)
	}

	// The same record, forged (no seal) on a fresh object.
	f = newFixture(t, interceptor.Funcs{})
	f.runner.Records = Records{Keys: keys}
	forged := rec
	forged.Seal = ""
	store(t, f, forged)
	if res := f.run(t, pol); res.State != finalizer.StatePending {
		t.Fatalf("forged: %s", res.State)
	}
	if diff := cmp.Diff([]string{"a", "b"}, rc.takeCalls()); diff != "" {
		t.Errorf("a forged record moved the cleanup on, -want +got:\n%s", diff)
	}
	if got := f.stored(t); !strings.HasPrefix(got.Seal, "k1.") {
		t.Errorf("the forged record was not replaced by a sealed one: %+v", got)
	}
}

// BenchmarkStartedBy: what a seal costs a read of a step record (the
// controller reads one per decision about an object being deleted),
// against the same read without keys.
func BenchmarkStartedBy(b *testing.B) {
	keys, err := recordseal.New(map[string][]byte{"k1": bytes.Repeat([]byte{1}, 32)}, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	const key = "example.com/k"
	rec, _ := record{Object: "0b5c6f0e-1111-4a2b-9c3d-000000000001", Policy: "0b5c6f0e-2222-4a2b-9c3d-000000000001", Fingerprint: "0123456789abcdef",
		Step: 1, Name: "drain", Since: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), Generation: 3, Lease: "lease-uid", Epoch: 7}.sealed(keys, key)
	text, _ := json.Marshal(rec)
	obj := &metav1.ObjectMeta{UID: rec.Object, Annotations: map[string]string{StateAnnotation(key): string(text)}}
	for name, rs := range map[string]Records{"without keys": {}, "sealed": {Keys: keys}} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := rs.StartedBy(obj, key); !ok {
					b.Fatal("not proven")
				}
			}
		})
	}
}
