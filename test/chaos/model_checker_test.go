/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestModelChecker feeds the checker made-up histories, so that each of its
// rules is shown to catch what it should and to pass its justified twin:
// the model test can only find what its checker can see.
func TestModelChecker(t *testing.T) {
	testenv.SkipShort(t)
	t0 := time.Now().Truncate(time.Second).Add(-time.Minute)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const ns, other, key = "tenant", "elsewhere", "example.com/k"
	nsRec := func(s float64, name string, deleting bool) record {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("ns-" + name)}}
		if deleting {
			n.DeletionTimestamp = &metav1.Time{Time: at(s)}
		}
		return record{At: at(s), Type: watch.Modified, Obj: n}
	}
	pol := func(s float64, name string, spec teardownv1alpha1.TeardownPolicySpec, deleting bool) record {
		p := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("p-" + name)}, Spec: spec}
		p.Status.Conditions = []metav1.Condition{{Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: at(s)}
		}
		return record{At: at(s), Type: watch.Modified, Obj: p}
	}
	spec := func(onFailure teardownv1alpha1.FailureAction, extra func(*teardownv1alpha1.TeardownPolicySpec)) teardownv1alpha1.TeardownPolicySpec {
		s := teardownv1alpha1.TeardownPolicySpec{Finalizer: key,
			Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", "web"))},
			Steps:   []teardownv1alpha1.Step{{Name: "a", OnFailure: onFailure}, {Name: "b", OnFailure: onFailure}}}
		if extra != nil {
			extra(&s)
		}
		return s
	}
	// stepsC is the spec edited to one step, c.
	stepsC := spec("", func(s *teardownv1alpha1.TeardownPolicySpec) { s.Steps = []teardownv1alpha1.Step{{Name: "c"}} })
	// servedBefore is policy p at generation 2, its spec selecting app=db,
	// its status recording a version that selects app=web as served, and
	// Ready=True as judged at generation observed.
	servedBefore := func(observed int64) record {
		served, err := json.Marshal(spec("", nil))
		if err != nil {
			t.Fatal(err)
		}
		p := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", UID: "p-p", Generation: 2},
			Spec: spec("", func(s *teardownv1alpha1.TeardownPolicySpec) {
				s.Targets = []teardownv1alpha1.Target{configMapTarget(labels("app", "db"))}
			})}
		p.Status.ServedSpec, p.Status.ServedGeneration = string(served), 1
		p.Status.Conditions = []metav1.Condition{{Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: observed}}
		return record{At: at(0), Type: watch.Modified, Obj: p}
	}
	// dbSpec selects app=db; dbFromGeneration2 is policy p first seen by
	// the watch at generation 2 with it (a relist after a kube-apiserver
	// restart delivers only the last generation).
	dbSpec := spec("", func(s *teardownv1alpha1.TeardownPolicySpec) {
		s.Targets = []teardownv1alpha1.Target{configMapTarget(labels("app", "db"))}
	})
	dbFromGeneration2 := func(s float64) record {
		r := pol(s, "p", dbSpec, false)
		r.Obj.(*teardownv1alpha1.TeardownPolicy).Generation = 2
		return r
	}
	// cm is one state of ConfigMap cm-r0-0001 (rv names the write).
	cm := func(s float64, rv string, app string, deletingSince float64, gone bool, fins ...string) record {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-r0-0001", UID: "obj", ResourceVersion: rv,
			Labels: map[string]string{"app": app}, Finalizers: fins}}
		if deletingSince > 0 {
			c.DeletionTimestamp = &metav1.Time{Time: at(deletingSince)}
		}
		typ := watch.Modified
		if gone {
			typ = watch.Deleted
		}
		return record{At: at(s), Type: typ, Obj: c}
	}
	call := func(s float64, policy, step string, answer hookMode, inProgress bool) ledgerEntry {
		id := policyID("TeardownPolicy", ns, policy)
		return ledgerEntry{At: at(s), Path: id, Policy: id, Step: step, Finalizer: key, UID: "obj", Namespace: ns, Name: "cm-r0-0001",
			Outcome: answer, InProgress: inProgress}
	}
	// recorded is cm's state with a step record of p for key, written by
	// the leadership (lease, epoch) under generation.
	recorded := func(s float64, rv, lease string, epoch, generation int64) record {
		r := cm(s, rv, "web", 3, false, key)
		v, err := json.Marshal(writtenRecord{Object: "obj", Policy: "p-p", Generation: generation, Lease: lease, Epoch: epoch})
		if err != nil {
			t.Fatal(err)
		}
		r.Obj.SetAnnotations(map[string]string{"steps.teardown.dev/example.com_k": string(v)})
		return r
	}
	// large is a state of cm-r0-0001 whose annotations leave no room for
	// Teardown's records.
	large := func(s float64, rv string, deletingSince float64, gone bool) record {
		r := cm(s, rv, "web", deletingSince, gone)
		r.Obj.SetAnnotations(map[string]string{fillerKey: "x"})
		return r
	}
	// attachedByP gives a state of cm-r0-0001 p's attached record for key.
	attachedByP := func(r record) record {
		r.Obj.SetAnnotations(map[string]string{"attached.finalizer.teardown.dev/" + annotationName(key): "obj/p-p"})
		return r
	}
	// guardedThenDeleted: tenant creates (rv 1), the controller attaches
	// (rv 2), the tenant deletes (rv 3), and the key goes at 10 s.
	base := []record{nsRec(0, ns, false), nsRec(0, other, false),
		cm(1, "1", "web", 0, false), cm(2, "2", "web", 0, false, key), cm(3, "3", "web", 3, false, key)}
	tenantWrites := map[string]bool{"1": true, "3": true}

	for _, tc := range []struct {
		name   string
		recs   []record
		ledger []ledgerEntry
		writes map[string]polWrite // the generator's policy writes (modelFacts.PolicyWrites)
		want   map[string]int
	}{{
		name:   "every step answered Success in order",
		recs:   append(base, pol(0, "p", spec("", nil), false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "a", hookSuccess, false), call(5, "p", "b", hookSuccess, false)},
		want:   map[string]int{},
	}, {
		name:   "the last step only in progress",
		recs:   append(base, pol(0, "p", spec("", nil), false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "a", hookSuccess, false), call(5, "p", "b", hookInProgress, true)},
		want:   map[string]int{"unjustified-removal": 1},
	}, {
		name:   "steps answered out of order",
		recs:   append(base, pol(0, "p", spec("", nil), false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "b", hookSuccess, false), call(5, "p", "a", hookSuccess, false)},
		want:   map[string]int{"unjustified-removal": 1},
	}, {
		name:   "every step of a version superseded before the removal",
		recs:   append(base, pol(0, "p", spec("", nil), false), pol(6, "p", stepsC, false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "a", hookSuccess, false), call(5, "p", "b", hookSuccess, false)},
		want:   map[string]int{"removal-on-a-superseded-version": 1},
	}, {
		name: "every step of the version that superseded it",
		recs: append(base, pol(0, "p", spec("", nil), false), pol(6, "p", stepsC, false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "a", hookSuccess, false), call(5, "p", "b", hookSuccess, false),
			call(8, "p", "c", hookSuccess, false)},
		want: map[string]int{},
	}, {
		name:   "superseded within the slack of the removal (our watch may see it first)",
		recs:   append(base, pol(0, "p", spec("", nil), false), pol(9, "p", stepsC, false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "a", hookSuccess, false), call(5, "p", "b", hookSuccess, false)},
		want:   map[string]int{},
	}, {
		name:   "Failure under onFailure Release",
		recs:   append(base, pol(0, "p", spec(teardownv1alpha1.FailureRelease, nil), false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "a", hookFailure, false)},
		want:   map[string]int{},
	}, {
		name:   "500 under onFailure Release is transient",
		recs:   append(base, pol(0, "p", spec(teardownv1alpha1.FailureRelease, nil), false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "a", hookError, false)},
		want:   map[string]int{"unjustified-removal": 1},
	}, {
		name: "deadline Release passed",
		recs: append(base, pol(0, "p", spec("", func(s *teardownv1alpha1.TeardownPolicySpec) {
			s.Deadline, s.OnDeadline = durationPtr(5*time.Second), teardownv1alpha1.DeadlineRelease
		}), false), cm(10, "9", "web", 3, true, key)),
		want: map[string]int{},
	}, {
		name: "onPolicyDeletion Release in a namespace being deleted",
		recs: append(base, pol(0, "p", spec("", func(s *teardownv1alpha1.TeardownPolicySpec) {
			s.OnPolicyDeletion = teardownv1alpha1.PolicyDeletionRelease
		}), false), nsRec(4, ns, true), pol(5, "p", spec("", func(s *teardownv1alpha1.TeardownPolicySpec) {
			s.OnPolicyDeletion = teardownv1alpha1.PolicyDeletionRelease
		}), true), cm(10, "9", "web", 3, true, key)),
		want: map[string]int{"unjustified-removal": 1},
	}, {
		name: "finished under another policy's steps",
		recs: append(base, pol(0, "p", spec("", nil), false), pol(0, "q", spec("", nil), false), cm(10, "9", "web", 3, true, key)),
		ledger: []ledgerEntry{call(4, "p", "a", hookInProgress, true),
			call(5, "q", "a", hookSuccess, false), call(6, "q", "b", hookSuccess, false)},
		want: map[string]int{"teardown-run-by-two-policies": 1, "unjustified-removal": 1},
	}, {
		name: "a call on an object the policy never selected",
		recs: append(base, pol(0, "p", spec("", func(s *teardownv1alpha1.TeardownPolicySpec) {
			s.Targets = []teardownv1alpha1.Target{configMapTarget(labels("app", "db"))}
		}), false)),
		ledger: []ledgerEntry{call(4, "p", "a", hookInProgress, true)},
		want:   map[string]int{"call-on-an-object-never-selected": 1},
	}, {
		name:   "a call under the version served before, its Ready condition about an earlier generation",
		recs:   append(base, servedBefore(1)),
		ledger: []ledgerEntry{call(4, "p", "a", hookInProgress, true)},
		want:   map[string]int{},
	}, {
		name:   "a call under the version served before, its Ready condition about this generation",
		recs:   append(base, servedBefore(2)),
		ledger: []ledgerEntry{call(4, "p", "a", hookInProgress, true)},
		want:   map[string]int{"call-on-an-object-never-selected": 1},
	}, {
		name:   "a call under a generation the watch never delivered, as the generator wrote it (seed 114)",
		recs:   append(base, dbFromGeneration2(5)),
		ledger: []ledgerEntry{call(4, "p", "a", hookInProgress, true)},
		writes: map[string]polWrite{"p-p/1": {At: at(0.5), Spec: ptrTo(spec("", nil))}, "p-p/2": {At: at(4.5), Spec: ptrTo(dbSpec)}},
		want:   map[string]int{},
	}, {
		name:   "a call under a generation the watch never delivered, what was written unknown",
		recs:   append(base, dbFromGeneration2(5)),
		ledger: []ledgerEntry{call(4, "p", "a", hookInProgress, true)},
		writes: map[string]polWrite{"p-p/1": {At: at(0.5)}, "p-p/2": {At: at(4.5), Spec: ptrTo(dbSpec)}},
		want:   map[string]int{"call-on-an-object-never-selected": 1},
	}, {
		name:   "a call before the generation the watch delivered, which never selected the object",
		recs:   append(base, dbFromGeneration2(5)),
		ledger: []ledgerEntry{call(4, "p", "a", hookInProgress, true)},
		writes: map[string]polWrite{"p-p/1": {At: at(0.5), Spec: ptrTo(dbSpec)}, "p-p/2": {At: at(4.5), Spec: ptrTo(dbSpec)}},
		want:   map[string]int{"call-on-an-object-never-selected": 1},
	}, {
		name: "step records of newer leaders and generations, and of another Lease",
		recs: append(base, pol(0, "p", spec("", nil), false), recorded(4, "4", "u", 1, 1), recorded(5, "5", "u", 1, 2),
			recorded(6, "6", "u", 2, 1), recorded(7, "7", "v", 0, 1), recorded(8, "8", "", 0, 1)),
		want: map[string]int{},
	}, {
		name: "a step record moved back to an older leader's, then to an older generation",
		recs: append(base, pol(0, "p", spec("", nil), false), recorded(4, "4", "u", 2, 1), recorded(5, "5", "u", 1, 1),
			recorded(6, "6", "u", 1, 3), recorded(7, "7", "u", 1, 2)),
		want: map[string]int{"record-moved-backwards": 2},
	}, {
		name: "a tenant's key removed from a live object",
		recs: []record{nsRec(0, ns, false), pol(0, "p", spec("", nil), false),
			cm(1, "1", "db", 0, false, key), cm(10, "9", "db", 0, false)},
		want: map[string]int{"unjustified-removal-of-a-live-object": 1},
	}, {
		name: "an attached key released from a live object that stopped matching",
		recs: []record{nsRec(0, ns, false), pol(0, "p", spec("", nil), false),
			cm(1, "1", "web", 0, false), cm(2, "2", "web", 0, false, key), cm(3, "3", "db", 0, false, key), cm(4, "4", "db", 0, false)},
		want: map[string]int{},
	}, {
		name: "an attached key released from a live object still selected",
		recs: []record{nsRec(0, ns, false), pol(0, "p", spec("", nil), false),
			cm(1, "1", "web", 0, false), cm(2, "2", "web", 0, false, key), cm(10, "4", "web", 0, false)},
		want: map[string]int{"unjustified-removal-of-a-live-object": 1},
	}, {
		name: "a large object selected for 70 s, never guarded, no word of it",
		recs: []record{nsRec(0, ns, false), pol(0, "p", spec("", nil), false), large(1, "1", 0, false), large(71, "2", 71, false), large(72, "3", 71, true)},
		want: map[string]int{"unguarded-without-a-word": 1},
	}, {
		name: "a large object selected for 70 s, never guarded, said by an AttachRefused Event",
		recs: []record{nsRec(0, ns, false), pol(0, "p", spec("", nil), false), large(1, "1", 0, false), large(71, "2", 71, false), large(72, "3", 71, true),
			{At: at(2), Type: watch.Added, Obj: &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e"}, Reason: teardownv1alpha1.AttachRefusedReason,
				InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "cm-r0-0001", UID: "obj"}}}},
		want: map[string]int{},
	}, {
		name: "a large object deleted 30 s after it was selected",
		recs: []record{nsRec(0, ns, false), pol(0, "p", spec("", nil), false), large(1, "1", 0, false), large(31, "2", 31, false), large(32, "3", 31, true)},
		want: map[string]int{},
	}, {
		name: "an attached key released from a live object when the policy that attached it, under a key of an earlier version, is deleted",
		recs: []record{nsRec(0, ns, false), pol(0, "q", spec("", func(s *teardownv1alpha1.TeardownPolicySpec) { s.Attach = teardownv1alpha1.AttachDeclared }), false),
			pol(0, "p", spec("", nil), false), cm(1, "1", "web", 0, false), attachedByP(cm(2, "2", "web", 0, false, key)),
			pol(3, "p", spec("", func(s *teardownv1alpha1.TeardownPolicySpec) { s.Finalizer = "example.com/other" }), false),
			pol(6, "p", spec("", func(s *teardownv1alpha1.TeardownPolicySpec) { s.Finalizer = "example.com/other" }), true),
			attachedByP(cm(7, "4", "web", 0, false))},
		want: map[string]int{},
	}, {
		name: "an Event in the namespace names another namespace's object",
		recs: append(base, record{At: at(5), Type: watch.Added, Obj: &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "e"},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "cm-r0-0001"},
			Message:        "still used by cm-r0-0002"}},
			record{At: at(1), Type: watch.Added, Obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "cm-r0-0002", UID: "other", ResourceVersion: "1"}}}),
		want: map[string]int{"message-names-another-namespace": 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.recs {
				tc.recs[i].Seq = i
			}
			c := newChecker(modelFacts{Namespaces: []string{ns, other}, TenantWrites: tenantWrites, PolicyWrites: tc.writes}, tc.recs, tc.ledger)
			c.check()
			if diff := cmp.Diff(tc.want, c.byRule); diff != "" {
				t.Errorf("violations by rule (-want +got):\n%s\n%v", diff, c.violations)
			}
		})
	}
}
