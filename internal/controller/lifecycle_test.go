/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// neverTrue is a wait step that never finishes: objects stay Terminating
// until something else releases them.
func neverTrue() teardownv1alpha1.Step {
	return teardownv1alpha1.Step{Name: "forever", Wait: &teardownv1alpha1.WaitAction{
		Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret", Selector: selector("never", "matches")}},
		Condition: "size(objects) > 0",
	}}
}

func labelled(ns, name string, labels ...string) *corev1.ConfigMap {
	l := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l}}
}

// editPolicy changes a TeardownPolicy's spec as it is now and waits until
// the new version is Ready.
func editPolicy(t *testing.T, pol *teardownv1alpha1.TeardownPolicy, change func(*teardownv1alpha1.TeardownPolicySpec)) {
	t.Helper()
	// The controller writes the policy's status meanwhile (a new
	// resourceVersion): read again and edit again on a conflict, as
	// kubectl edit does.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pol), pol); err != nil {
			return err
		}
		change(&pol.Spec)
		return k8s.Update(t.Context(), pol)
	})
	if err != nil {
		t.Fatal(err)
	}
	mustBeReady(t, pol)
}

// satisfyNeverTrue makes neverTrue's condition hold in ns, so the
// teardowns waiting on it finish.
func satisfyNeverTrue(t *testing.T, ns string) {
	t.Helper()
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "now-it-matches", Namespace: ns, Labels: map[string]string{"never": "matches"}}})
}

// stillGuarded fails unless obj still carries key after a while: what was
// meant to be let go or cut short would be gone by then.
func stillGuarded(t *testing.T, obj client.Object, key, why string) {
	t.Helper()
	time.Sleep(2 * time.Second)
	if ok, err := hasFinalizer(obj, key)(t.Context()); !ok || err != nil {
		t.Fatalf("%s lost %s %s (err %v)", obj.GetName(), key, why, err)
	}
}

// TestDeletedPolicyFinishesWhatItStarted: deleting a policy releases the
// objects it guards that are not being deleted at once, but an object whose
// teardown has started keeps its finalizer, and the policy its own, until
// that cleanup succeeded; then both go.
func TestDeletedPolicyFinishesWhatItStarted(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "sticky", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "sticky")}},
			Steps:   []teardownv1alpha1.Step{neverTrue()},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/sticky"
	var cms []*corev1.ConfigMap
	for i := range 5 {
		cm := labelled(ns, fmt.Sprintf("cm-%d", i), "app", "sticky")
		create(t, cm)
		cms = append(cms, cm)
	}
	for _, cm := range cms {
		testenv.Eventually(t, 20*time.Second, "the finalizer on "+cm.Name, hasFinalizer(cm, key))
	}
	del(t, cms[0]) // stuck on the never-true step
	stillGuarded(t, cms[0], key, "before the policy was deleted")

	del(t, pol)
	for _, cm := range cms[1:] {
		testenv.Eventually(t, 20*time.Second, cm.Name+" released", lacksFinalizer(cm, key))
	}
	note := waitForEvent(t, ns, pol.Name, "ReleasedGuardedObjects")
	if !strings.Contains(note, "from 4 object(s)") {
		t.Errorf("policy Event says %q, want 4 objects released", note)
	}
	stillGuarded(t, cms[0], key, "when its policy was deleted mid-teardown")
	if ok, _ := hasFinalizer(pol, "teardown.dev/release-guarded-objects")(t.Context()); !ok {
		t.Fatal("the policy went while a teardown it started was in progress")
	}
	satisfyNeverTrue(t, ns)
	testenv.Eventually(t, 20*time.Second, "the Terminating object to be gone once its cleanup succeeded", testenv.Gone(k8s, cms[0]))
	testenv.Eventually(t, 20*time.Second, "the policy to be gone", testenv.Gone(k8s, pol))
}

// TestDeletedPolicyWithReleaseLetsGo: onPolicyDeletion: Release lets the
// objects being torn down go at once, each with a FinalizerReleased Event.
func TestDeletedPolicyWithReleaseLetsGo(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "letgo", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets:          []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "letgo")}},
			Steps:            []teardownv1alpha1.Step{neverTrue()},
			OnPolicyDeletion: teardownv1alpha1.PolicyDeletionRelease,
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/letgo"
	cm := labelled(ns, "cm", "app", "letgo")
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(cm, key))
	del(t, cm)
	stillGuarded(t, cm, key, "before the policy was deleted")
	del(t, pol)
	testenv.Eventually(t, 20*time.Second, "the Terminating object to be gone", testenv.Gone(k8s, cm))
	testenv.Eventually(t, 20*time.Second, "the policy to be gone", testenv.Gone(k8s, pol))
	note := waitForEvent(t, ns, cm.Name, finalizer.ReasonFinalizerReleased)
	if !strings.Contains(note, "onPolicyDeletion is Release") {
		t.Errorf("release Event says %q, want onPolicyDeletion named", note)
	}
}

// TestStartedTeardownOutlivesEdits: once an object is being deleted, its
// labels changing, its policy's selector narrowing and its policy's key
// changing do not cut its cleanup short: it keeps its key until the cleanup
// succeeded. The edited-away key is served as retired, shown in status,
// and dropped from status once no object carries it.
func TestStartedTeardownOutlivesEdits(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "steady", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: "old.example.com/steady",
			Targets:   []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "steady")}},
			Steps:     []teardownv1alpha1.Step{neverTrue()},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	relabelled, narrowed, rekeyed := labelled(ns, "relabelled", "app", "steady"), labelled(ns, "narrowed", "app", "steady", "tier", "a"),
		labelled(ns, "rekeyed", "app", "steady", "tier", "b")
	for _, cm := range []*corev1.ConfigMap{relabelled, narrowed, rekeyed} {
		create(t, cm)
		testenv.Eventually(t, 20*time.Second, "the finalizer on "+cm.Name, hasFinalizer(cm, "old.example.com/steady"))
		del(t, cm)
	}
	if err := k8s.Patch(t.Context(), relabelled, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"other"}}}`))); err != nil {
		t.Fatal(err)
	}
	stillGuarded(t, relabelled, "old.example.com/steady", "when its labels stopped matching mid-teardown")

	editPolicy(t, pol, func(s *teardownv1alpha1.TeardownPolicySpec) {
		s.Targets[0].Selector = selector("app", "steady", "tier", "b")
	})
	stillGuarded(t, narrowed, "old.example.com/steady", "when the selector was narrowed mid-teardown")

	editPolicy(t, pol, func(s *teardownv1alpha1.TeardownPolicySpec) { s.Finalizer = "new.example.com/steady" })
	stillGuarded(t, rekeyed, "old.example.com/steady", "when the policy's key changed mid-teardown")
	testenv.Eventually(t, 20*time.Second, "status.retired to list the old key", func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), pol); err != nil {
			return false, err
		}
		return pol.Status.Finalizer == "new.example.com/steady" && len(pol.Status.Retired) == 1 &&
			pol.Status.Retired[0].Finalizer == "old.example.com/steady" && pol.Status.Retired[0].Kind == "ConfigMap", nil
	})

	satisfyNeverTrue(t, ns)
	for _, cm := range []*corev1.ConfigMap{relabelled, narrowed, rekeyed} {
		testenv.Eventually(t, 30*time.Second, cm.Name+" gone once its cleanup succeeded", testenv.Gone(k8s, cm))
	}
	testenv.Eventually(t, 30*time.Second, "the retired key to leave the status", func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), pol); err != nil {
			return false, err
		}
		return len(pol.Status.Retired) == 0, nil
	})
}

// TestForeignKeyIsNeverStripped: a policy naming a key that another
// controller put on objects it does not select is not Ready and never
// removes that key, from objects being deleted or not.
func TestForeignKeyIsNeverStripped(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	const key = "example.com/other-operator"
	theirs, going := labelled(ns, "theirs", "owner", "other"), labelled(ns, "going", "owner", "other")
	for _, cm := range []*corev1.ConfigMap{theirs, going} {
		cm.Finalizers = []string{key}
		create(t, cm)
	}
	del(t, going)
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "grabby", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: key,
			Targets:   []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("matches", "nothing")}},
		},
	}
	create(t, pol)
	if c := ready(t, pol); c.Status != metav1.ConditionFalse || c.Reason != teardownv1alpha1.FinalizerConflictReason || !strings.Contains(c.Message, "another controller") {
		t.Errorf("Ready = %s %s %q, want False FinalizerConflict naming another controller", c.Status, c.Reason, c.Message)
	}
	stillGuarded(t, theirs, key, "to a policy that does not select it")
	stillGuarded(t, going, key, "while being deleted, to a policy that does not select it")
	// Cleanup for the test namespace: play the other operator.
	for _, cm := range []*corev1.ConfigMap{theirs, going} {
		if err := finalizer.Remove(t.Context(), finalizer.ForClient(k8s, k8s), cm, key); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInvalidJobTemplateIsFoundUpFront: a job step whose Job the API
// server refuses makes the policy not Ready when it is served, not when an
// object is deleted.
func TestInvalidJobTemplateIsFoundUpFront(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-job", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("job", "bad")}},
			Steps: []teardownv1alpha1.Step{{Name: "drain", Job: &teardownv1alpha1.JobAction{Template: teardownv1alpha1.JobTemplate{
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					// A container without an image: the API server refuses the Job.
					Containers: []corev1.Container{{Name: "drain", Command: []string{"true"}}},
				}}},
			}}}},
		},
	}
	create(t, pol)
	c := ready(t, pol)
	if c.Status != metav1.ConditionFalse || c.Reason != teardownv1alpha1.InvalidJobTemplateReason || !strings.Contains(c.Message, "image") {
		t.Errorf("Ready = %s %s %q, want False InvalidJobTemplate about the image", c.Status, c.Reason, c.Message)
	}
}

// TestUnmatchedObjectIsReleased: relabelling an object out of a policy's
// selector releases its finalizer.
func TestUnmatchedObjectIsReleased(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "selective", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("tier", "db")}},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/selective"
	cm := labelled(ns, "db-config", "tier", "db")
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(cm, key))
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"tier":"web"}}}`))
	if err := k8s.Patch(t.Context(), cm, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the finalizer to be released", lacksFinalizer(cm, key))
	// The attached record went with it, so it never vouches for the same
	// key put there later by someone else.
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Annotations[finalizer.AttachedAnnotation(key)]; ok {
		t.Errorf("the attached record stayed after the key was released: %v", cm.Annotations)
	}
	note := waitForEvent(t, ns, cm.Name, finalizer.ReasonFinalizerReleased)
	if !strings.Contains(note, "no longer matches TeardownPolicy "+ns+"/selective") {
		t.Errorf("release Event says %q, want that the object no longer matches", note)
	}
}

// TestPolicyDeadline: one policy whose cleanup never finishes, with Release
// on its deadline, lets its object go; one with Block keeps it.
func TestPolicyDeadline(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	for _, onDeadline := range []teardownv1alpha1.DeadlineAction{teardownv1alpha1.DeadlineRelease, teardownv1alpha1.DeadlineBlock} {
		name := strings.ToLower(string(onDeadline))
		create(t, &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: teardownv1alpha1.TeardownPolicySpec{
				Targets:    []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("deadline", name)}},
				Steps:      []teardownv1alpha1.Step{neverTrue()},
				Deadline:   &metav1.Duration{Duration: 2 * time.Second},
				OnDeadline: onDeadline,
			},
		})
	}
	released, blocked := labelled(ns, "released", "deadline", "release"), labelled(ns, "blocked", "deadline", "block")
	create(t, released)
	create(t, blocked)
	testenv.Eventually(t, 20*time.Second, "the Release policy's finalizer", hasFinalizer(released, ns+".teardown.dev/release"))
	testenv.Eventually(t, 20*time.Second, "the Block policy's finalizer", hasFinalizer(blocked, ns+".teardown.dev/block"))
	del(t, released)
	del(t, blocked)
	testenv.Eventually(t, 20*time.Second, "the Release object to be gone", testenv.Gone(k8s, released))
	waitForEvent(t, ns, blocked.Name, finalizer.ReasonDeadlineExceeded)
	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(blocked), got); err != nil {
		t.Fatalf("the Block object went past its deadline: %v", err)
	}
	// The Block policy's status says what the object waits on.
	pol := &teardownv1alpha1.TeardownPolicy{}
	testenv.Eventually(t, 20*time.Second, "the Block policy to report its blocked object", func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "block"}, pol); err != nil {
			return false, err
		}
		return pol.Status.Blocked == 1 && len(pol.Status.BlockedObjects) == 1 &&
			pol.Status.BlockedObjects[0].Reason == teardownv1alpha1.DeadlineExceededReason, nil
	})
	b := pol.Status.BlockedObjects[0]
	if b.Object.Name != "blocked" || b.Step != "forever" || b.Reason != teardownv1alpha1.DeadlineExceededReason || !strings.Contains(b.Message, "size(objects) > 0") {
		t.Errorf("blocked object = %+v, want blocked on step forever past its deadline", b)
	}
	if pol.Status.Guarded != 1 || pol.Status.Terminating != 1 {
		t.Errorf("status counts guarded=%d terminating=%d, want 1 and 1", pol.Status.Guarded, pol.Status.Terminating)
	}
	// Deleting the policy releases it when the policy says so.
	pol.Spec.OnPolicyDeletion = teardownv1alpha1.PolicyDeletionRelease
	if err := k8s.Update(t.Context(), pol); err != nil {
		t.Fatal(err)
	}
	del(t, pol)
	testenv.Eventually(t, 20*time.Second, "the Block object to be gone once its policy is deleted", testenv.Gone(k8s, blocked))
}

// TestNamespaceDeletionWaitsForCleanup: deleting a namespace whose objects
// are guarded finishes once their cleanup ran.
func TestNamespaceDeletionWaitsForCleanup(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	var mu sync.Mutex
	cleaned := map[string]bool{}
	srv := newCleanupServer(t, func(_ int, req steps.WebhookRequest, w http.ResponseWriter) {
		mu.Lock()
		cleaned[req.Object.Name] = true
		mu.Unlock()
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	})
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "ns-cleanup", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("guard", "yes")}},
			Steps:   []teardownv1alpha1.Step{srv.webhookStep("deregister")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/ns-cleanup"
	names := []string{"a", "b", "c"}
	for _, n := range names {
		cm := labelled(ns, n, "guard", "yes")
		create(t, cm)
		testenv.Eventually(t, 20*time.Second, "the finalizer on "+n, hasFinalizer(cm, key))
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	del(t, nsObj)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, testenv.Gone(k8s, nsObj)); err != nil {
		got := &corev1.Namespace{}
		_ = k8s.Get(t.Context(), client.ObjectKeyFromObject(nsObj), got)
		gotPol := &teardownv1alpha1.TeardownPolicy{}
		_ = k8s.Get(t.Context(), client.ObjectKeyFromObject(pol), gotPol)
		t.Fatalf("namespace not gone: %v; its conditions: %+v; the policy's: %+v", err, got.Status.Conditions, gotPol.Status.Conditions)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if !cleaned[n] {
			t.Errorf("namespace went away before %s's cleanup ran", n)
		}
	}
}

// TestNamespaceDeletionOutlivesItsRoleBindings: a namespace's deletion
// deletes the RoleBinding that grants the policy's ServiceAccount its rights,
// in no set order with the rest (the race behind a CI failure of
// TestNamespaceDeletionWaitsForCleanup: 3 of 17 runs here). The policy,
// deleted with its namespace and checked again then (its generation moves),
// stays in force as deleting and finishes the teardowns the namespace owes,
// its Ready condition naming the right that went; a spec edited then gets no
// such leave. Here the RoleBinding goes first, and the cleanup answers
// InProgress until those conditions show.
func TestNamespaceDeletionOutlivesItsRoleBindings(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	var finish atomic.Bool
	var mu sync.Mutex
	cleaned, edited := map[string]bool{}, 0
	srv := newCleanupServer(t, func(_ int, req steps.WebhookRequest, w http.ResponseWriter) {
		if req.Step != "deregister" {
			mu.Lock()
			edited++
			mu.Unlock()
		}
		if !finish.Load() {
			answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookInProgress, RetryAfterSeconds: 1})
			return
		}
		mu.Lock()
		cleaned[req.Object.Name] = true
		mu.Unlock()
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
	})
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-goes-first", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("guard", "yes")}},
			Steps:   []teardownv1alpha1.Step{srv.webhookStep("deregister")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/rbac-goes-first"
	names := []string{"a", "b"}
	for _, n := range names {
		cm := labelled(ns, n, "guard", "yes")
		create(t, cm)
		testenv.Eventually(t, 20*time.Second, "the finalizer on "+n, hasFinalizer(cm, key))
	}
	// testenv.NewNamespace granted ServiceAccount default "edit" with this
	// RoleBinding.
	del(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "default-edit", Namespace: ns}})
	if err := testenv.WaitDeniedClient(t.Context(), k8s, testenv.Access(rbacv1.ServiceAccountKind, ns, "default",
		authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "configmaps"})); err != nil {
		t.Fatal(err)
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	del(t, nsObj)
	var last string
	testenv.Eventually(t, 30*time.Second, "the deleted policy kept in force, its Ready condition naming the right that went", func(ctx context.Context) (bool, error) {
		got := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, teardownv1alpha1.ReadyCondition)
		if cond == nil || got.DeletionTimestamp == nil {
			return false, nil
		}
		last = cond.Message
		return cond.Status == metav1.ConditionTrue && strings.HasPrefix(cond.Message, "deleted: finishing") &&
			strings.Contains(cond.Message, "ServiceAccount "+ns+"/default may not patch configmaps"), nil
	})
	t.Logf("Ready: %s", last)
	// A spec edited now is not the version checked while the rights were
	// there: it gets no such leave, and the version served before finishes.
	got := &teardownv1alpha1.TeardownPolicy{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pol), got); err != nil {
		t.Fatal(err)
	}
	base := got.DeepCopy()
	got.Spec.Steps = []teardownv1alpha1.Step{srv.webhookStep("edited-while-deleted")}
	if err := k8s.Patch(t.Context(), got, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the edited spec refused, the version served before in force", func(ctx context.Context) (bool, error) {
		got := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, teardownv1alpha1.ReadyCondition)
		if cond == nil || cond.ObservedGeneration != got.Generation {
			return false, nil
		}
		last = cond.Message
		return strings.Contains(cond.Message, "its current spec cannot be served (the version served before (generation "), nil
	})
	t.Logf("Ready after the edit: %s", last)
	finish.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, testenv.Gone(k8s, nsObj)); err != nil {
		got := &teardownv1alpha1.TeardownPolicy{}
		_ = k8s.Get(t.Context(), client.ObjectKeyFromObject(pol), got)
		t.Fatalf("namespace not gone: %v; the policy's conditions: %+v", err, got.Status.Conditions)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if !cleaned[n] {
			t.Errorf("namespace went away before %s's cleanup ran", n)
		}
	}
	if edited > 0 {
		t.Errorf("the spec edited after the rights went was served: its step was called %d time(s)", edited)
	}
}

// TestPolicyThatCannotBeServed: a policy with an unknown kind, a bad CEL
// condition or a cluster-scoped target in a namespaced policy reports why in
// its Ready condition, and never disturbs a good policy beside it.
func TestPolicyThatCannotBeServed(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	cases := map[string]struct {
		spec       teardownv1alpha1.TeardownPolicySpec
		wantReason string
		wantText   string
	}{
		"unknown kind": {
			spec:       teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "nope.example.com/v1", Kind: "Widget", Selector: selector()}}},
			wantReason: teardownv1alpha1.UnknownKindReason, wantText: "Widget",
		},
		"bad condition": {
			spec: teardownv1alpha1.TeardownPolicySpec{
				Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("x", "y")}},
				Steps: []teardownv1alpha1.Step{{Name: "w", Wait: &teardownv1alpha1.WaitAction{
					Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod", Selector: selector()}},
					Condition: "size(objects) ==",
				}}},
			},
			wantReason: teardownv1alpha1.InvalidConditionReason, wantText: "does not compile",
		},
		"cluster-scoped target": {
			spec:       teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Selector: selector()}}},
			wantReason: teardownv1alpha1.ClusterScopedKindReason, wantText: "ClusterTeardownPolicy",
		},
		"a webhook to the cloud metadata address": {
			spec: teardownv1alpha1.TeardownPolicySpec{
				Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("x", "m")}},
				Steps: []teardownv1alpha1.Step{{Name: "hook", Webhook: &teardownv1alpha1.WebhookAction{
					URL: ptr.To("https://169.254.169.254/latest/meta-data/")}}},
			},
			wantReason: teardownv1alpha1.InvalidWebhookReason, wantText: "169.254.169.254",
		},
		"unknown step kind": {
			spec: teardownv1alpha1.TeardownPolicySpec{
				Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("x", "z")}},
				Steps: []teardownv1alpha1.Step{{Name: "d", Delete: &teardownv1alpha1.DeleteAction{
					Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Gadget", Selector: selector("app", "gadget")}},
				}}},
			},
			wantReason: teardownv1alpha1.UnknownKindReason, wantText: "Gadget",
		},
	}
	i := 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i++
			pol := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bad-%d", i), Namespace: ns}, Spec: tc.spec}
			create(t, pol)
			c := ready(t, pol)
			if c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantText) {
				t.Errorf("Ready = %s %s %q, want False %s mentioning %q", c.Status, c.Reason, c.Message, tc.wantReason, tc.wantText)
			}
		})
	}
	good := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns},
		Spec:       teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("good", "yes")}}},
	}
	create(t, good)
	mustBeReady(t, good)
	cm := labelled(ns, "guarded", "good", "yes")
	create(t, cm)
	testenv.Eventually(t, 20*time.Second, "the good policy to guard its object", hasFinalizer(cm, ns+".teardown.dev/good"))
	del(t, cm)
	testenv.Eventually(t, 20*time.Second, "the object to go", testenv.Gone(k8s, cm))
}

// TestPolicyEditReleasesWhatItNoLongerGuards: editing a policy to drop a
// target kind releases that kind's objects, and changing its finalizer key
// moves every object from the old key to the new one; no key is stranded.
func TestPolicyEditReleasesWhatItNoLongerGuards(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "editable", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: "old.example.com/cleanup",
			Targets: []teardownv1alpha1.Target{
				{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("edit", "me")},
				{APIVersion: "v1", Kind: "Secret", Selector: selector("edit", "me")},
			},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	cm := labelled(ns, "cm", "edit", "me")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret", Namespace: ns, Labels: map[string]string{"edit": "me"}}}
	create(t, cm)
	create(t, secret)
	testenv.Eventually(t, 20*time.Second, "the ConfigMap guarded", hasFinalizer(cm, "old.example.com/cleanup"))
	testenv.Eventually(t, 20*time.Second, "the Secret guarded", hasFinalizer(secret, "old.example.com/cleanup"))

	editPolicy(t, pol, func(s *teardownv1alpha1.TeardownPolicySpec) { s.Targets = s.Targets[:1] })
	testenv.Eventually(t, 20*time.Second, "the Secret released", lacksFinalizer(secret, "old.example.com/cleanup"))
	if ok, _ := hasFinalizer(cm, "old.example.com/cleanup")(t.Context()); !ok {
		t.Error("the ConfigMap lost its finalizer though its kind is still targeted")
	}

	editPolicy(t, pol, func(s *teardownv1alpha1.TeardownPolicySpec) { s.Finalizer = "new.example.com/cleanup" })
	testenv.Eventually(t, 20*time.Second, "the old key released", lacksFinalizer(cm, "old.example.com/cleanup"))
	testenv.Eventually(t, 20*time.Second, "the new key attached", hasFinalizer(cm, "new.example.com/cleanup"))
}
