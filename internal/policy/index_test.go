/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// manyPolicies is an index of n TeardownPolicies on ConfigMaps, one per
// namespace, as the scale benchmark has (docs/performance.md, Scale).
func manyPolicies(n int) *Index {
	x := NewIndex()
	for i := range n {
		ns := fmt.Sprintf("ns-%04d", i)
		pol := &Policy{Ref: Ref{Kind: KindNamespaced, Namespace: ns, Name: "p"}, UID: types.UID(ns), Key: "x.example.com/" + ns,
			Targets: []Selector{{GVK: cmKind, Selector: labels.Everything()}}, Deadline: time.Minute}
		x.Set(&Served{Policy: pol, Keys: []ServedKey{{Key: pol.Key, Kinds: pol.Kinds()}}})
	}
	return x
}

// ForKind is asked once per guarded object reconciled: with 1,000
// policies, sorting them again each time (two Ref.String() allocations per
// comparison) cost more than the rest of the reconcile. Its answer is kept
// until a policy is set or deleted.
func TestForKindAllocatesNothingOnceAsked(t *testing.T) {
	x := manyPolicies(1000)
	if got := len(x.ForKind(cmKind)); got != 1000 {
		t.Fatalf("ForKind returned %d policies, want 1000", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { x.ForKind(cmKind) }); allocs != 0 {
		t.Errorf("ForKind allocates %v times per call with unchanged policies, want 0", allocs)
	}
}

// Negative control of the kept answer: a policy set or deleted shows in
// the next ForKind, in order.
func TestForKindSeesSetAndDelete(t *testing.T) {
	x := manyPolicies(3)
	refs := func() []string {
		var out []string
		for _, s := range x.ForKind(cmKind) {
			out = append(out, s.Ref.String())
		}
		return out
	}
	if diff := cmp.Diff([]string{"TeardownPolicy ns-0000/p", "TeardownPolicy ns-0001/p", "TeardownPolicy ns-0002/p"}, refs()); diff != "" {
		t.Fatalf("ForKind (-want +got):\n%s", diff)
	}
	pol := &Policy{Ref: Ref{Kind: KindCluster, Name: "c"}, UID: "c", Key: "x.example.com/c", Targets: []Selector{{GVK: cmKind, Selector: labels.Everything()}}}
	x.Set(&Served{Policy: pol, Keys: []ServedKey{{Key: pol.Key, Kinds: pol.Kinds()}}})
	x.Delete(Ref{Kind: KindNamespaced, Namespace: "ns-0001", Name: "p"})
	if diff := cmp.Diff([]string{"ClusterTeardownPolicy/c", "TeardownPolicy ns-0000/p", "TeardownPolicy ns-0002/p"}, refs()); diff != "" {
		t.Errorf("ForKind after a Set and a Delete (-want +got):\n%s", diff)
	}
}

func BenchmarkForKind1000(b *testing.B) {
	x := manyPolicies(1000)
	b.ReportAllocs()
	for b.Loop() {
		x.ForKind(cmKind)
	}
}

// Every policy's periodic refresh puts it in force again with the same
// kinds: the kept answer follows (the new version in the old one's place)
// without sorting every policy again, and a slice a caller holds is left
// as it was. A policy whose kinds change leaves and joins the right answers.
func TestForKindFollowsARefreshWithoutRebuilding(t *testing.T) {
	x := manyPolicies(1000)
	before := x.ForKind(cmKind)
	old := before[1]
	// A refresh and the next ForKind: one copy of the answer, not a
	// sort of 1,000 policies (thousands of allocations).
	if allocs := testing.AllocsPerRun(100, func() {
		x.Set(&Served{Policy: old.Policy, Keys: old.Keys})
		x.ForKind(cmKind)
	}); allocs > 5 {
		t.Errorf("a refresh and ForKind allocate %v times, want a handful (the answer was rebuilt)", allocs)
	}
	refreshed := &Served{Policy: old.Policy, Keys: old.Keys}
	x.Set(refreshed)
	after := x.ForKind(cmKind)
	if after[1] != refreshed || len(after) != 1000 {
		t.Errorf("after a refresh ForKind()[1] is %p (of %d), want the refreshed version %p", after[1], len(after), refreshed)
	}
	if before[1] != old {
		t.Error("a refresh changed a slice ForKind had returned")
	}

	secretKind := cmKind
	secretKind.Kind = "Secret"
	if got := len(x.ForKind(secretKind)); got != 0 {
		t.Fatalf("ForKind(Secret) = %d policies, want 0", got)
	}
	moved := &Policy{Ref: old.Ref, UID: old.UID, Key: old.Key, Targets: []Selector{{GVK: secretKind, Selector: labels.Everything()}}}
	x.Set(&Served{Policy: moved, Keys: []ServedKey{{Key: moved.Key, Kinds: moved.Kinds()}}})
	if got := len(x.ForKind(cmKind)); got != 999 {
		t.Errorf("ForKind(ConfigMap) after a policy moved to Secrets = %d, want 999", got)
	}
	if got := x.ForKind(secretKind); len(got) != 1 || got[0].Ref != old.Ref {
		t.Errorf("ForKind(Secret) after a policy moved to Secrets = %v, want it", got)
	}
}

// TestEarlierRelease: an unbound step record counts as an earlier
// release's on objects created before status.boundRecordsSince, including
// those stamped with its second (creation timestamps are whole seconds, so
// they may be older), and never on later ones or without the field.
func TestEarlierRelease(t *testing.T) {
	// As the controller writes it: whole seconds.
	since := time.Date(2026, 11, 28, 18, 26, 23, 0, time.UTC)
	created := func(at time.Time) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at)}
	}
	cases := map[string]struct {
		since time.Time
		obj   *metav1.ObjectMeta
		want  bool
	}{
		"created a second before":   {since, created(since.Truncate(time.Second).Add(-time.Second)), true},
		"created in since's second": {since, created(since.Truncate(time.Second)), true},
		"created the second after":  {since, created(since.Truncate(time.Second).Add(time.Second)), false},
		"no boundRecordsSince":      {time.Time{}, created(since.Add(-time.Hour)), false},
		"no creation timestamp":     {since, created(time.Time{}), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &Served{BoundRecordsSince: tc.since}
			if got := s.EarlierRelease(tc.obj); got != tc.want {
				t.Errorf("EarlierRelease = %v, want %v", got, tc.want)
			}
		})
	}
}
