/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// previousReleases are the commits whose controllers the upgrade test
// replaces (and rolls back to). The project has no tagged release yet, so
// these are the record formats this release must finish teardowns of:
// main before step records were bound to their object's UID (issue 16),
// main before they carried the writer's epoch and the policy's generation,
// with every write behind the Lease (issue 27), and main before records
// were sealed (issue 27). UPGRADING.md
// names them. TEARDOWN_PREVIOUS_CONTROLLER_BIN runs one binary built
// elsewhere instead of both.
var previousReleases = []struct {
	name, commit string
	// boundSince: it sets status.boundRecordsSince itself.
	boundSince bool
}{
	{"records not bound to their object", "f12370f81b6916522478fc3154c78c4306f4175d", false},
	{"records without epoch", "37634af74cc885c3693f017ecd3138616db2bee8", false},
	{"records without seals", "7455199fec425218f996b3e1e2b89b60b3b69108", true},
}

// previousController returns the controller of commit, built from the
// module's git history (about 35 s each with a warm build cache).
func previousController(t *testing.T, commit string) string {
	t.Helper()
	if bin := os.Getenv("TEARDOWN_PREVIOUS_CONTROLLER_BIN"); bin != "" {
		return bin
	}
	if err := exec.Command("git", "-C", moduleRoot(t), "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		// A checkout without the history (a shallow clone) cannot build
		// it: say so, loudly, rather than fail for the checkout's sake.
		t.Skipf("the module's git history does not hold commit %s (git fetch --unshallow), or set TEARDOWN_PREVIOUS_CONTROLLER_BIN", commit)
	}
	bin, err := procctl.BuildAt(commit, filepath.Join(env.Dir, "bin"))
	if err != nil {
		t.Fatalf("the previous release's controller: %v", err)
	}
	return bin
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestUpgradeMidTeardown (issue 27, family 6): teardowns in flight when the
// controller of a previous release is replaced by this tree's (an upgrade),
// and when this tree's is replaced by the previous release's (a rollback).
// Under the first controller, objects are deleted and held at each step of
// a two-step policy, one of them is relabelled out of its policy
// mid-teardown, and a second policy's steps are edited mid-teardown; then
// the controller is replaced (SIGTERM, as a rolling update stops it) and an
// object guarded before the switch is deleted after it. Nothing may go
// before every step of the version in force answered Success, and
// everything must go once the receivers let it: no teardown stalls across
// the switch. Before status.boundRecordsSince, the upgrade from the release
// whose records were not bound stranded the relabelled object for good.
func TestUpgradeMidTeardown(t *testing.T) {
	testenv.SkipShort(t)
	for _, prev := range previousReleases {
		t.Run(prev.name, func(t *testing.T) {
			bin := previousController(t, prev.commit)
			t.Run("upgrade", func(t *testing.T) { upgradeScenario(t, bin, "", prev.boundSince) })
			t.Run("rollback", func(t *testing.T) { upgradeScenario(t, "", bin, prev.boundSince) })
		})
	}
}

// upgradeScenario runs the switch from fromBin to toBin ("": this tree's);
// boundSince says the previous release sets status.boundRecordsSince.
func upgradeScenario(t *testing.T, fromBin, toBin string, boundSince bool) {
	ns := newNamespace(t)
	// This tree's controller seals its records with keys of a namespace
	// of its own (as installed, its own namespace); the previous
	// release's knows no such flag.
	keysNS := newNamespace(t)
	args := func(bin string) []string {
		if bin != "" {
			return nil
		}
		return []string{"--cluster-resource-namespace=" + keysNS}
	}
	var mu sync.Mutex
	open := map[string]bool{} // "<object>/<step>" answers Success
	hook := newCleanupServer(t, func(req webhookRequest) answer {
		mu.Lock()
		defer mu.Unlock()
		if open[req.Object.Name+"/"+req.Step] || open["*"] {
			return success
		}
		return inProgress
	})
	openGate := func(gates ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, g := range gates {
			open[g] = true
		}
	}
	const key, editedKey = "example.com/upgrade", "example.com/upgrade-edited"
	pol := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two-steps"},
		Spec: teardownv1alpha1.TeardownPolicySpec{Finalizer: key, Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", "web"))},
			Steps: []teardownv1alpha1.Step{hook.step("a"), hook.step("b")}}}
	edited := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edited"},
		Spec: teardownv1alpha1.TeardownPolicySpec{Finalizer: editedKey, Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", "db"))},
			Steps: []teardownv1alpha1.Step{hook.step("a"), hook.step("b")}}}

	before := newControllerOf(t, fromBin, "before", "", args(fromBin)...)
	if err := before.Start(); err != nil {
		t.Fatal(err)
	}
	create(t, pol)
	create(t, edited)
	mustBeReady(t, pol)
	mustBeReady(t, edited)
	objs := map[string]*corev1.ConfigMap{
		"at-a":       configMap(ns, "at-a", labels("app", "web")),
		"at-b":       configMap(ns, "at-b", labels("app", "web")),
		"relabelled": configMap(ns, "relabelled", labels("app", "web")),
		"live":       configMap(ns, "live", labels("app", "web")),
		"edited":     configMap(ns, "edited", labels("app", "db")),
	}
	keys := map[string]string{"at-a": key, "at-b": key, "relabelled": key, "live": key, "edited": editedKey}
	// The steps of the version in force when each object may go.
	want := map[string][]string{"at-a": {"a", "b"}, "at-b": {"a", "b"}, "relabelled": {"a", "b"}, "live": {"a", "b"}, "edited": {"a", "b", "c"}}
	for name, cm := range objs {
		create(t, cm)
		testenv.Eventually(t, 30*time.Second, name+" guarded", func(ctx context.Context) (bool, error) { return carries(ctx, cm, keys[name]) })
	}
	openGate("at-b/a", "edited/a")
	for _, name := range []string{"at-a", "at-b", "relabelled", "edited"} {
		deleteNow(t, objs[name])
	}
	calledFor := func(name, step string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) { return hook.callsOf(objs[name].UID, step) > 0, nil }
	}
	testenv.Eventually(t, 30*time.Second, "at-a held at step a", calledFor("at-a", "a"))
	testenv.Eventually(t, 30*time.Second, "at-b held at step b", calledFor("at-b", "b"))
	testenv.Eventually(t, 30*time.Second, "relabelled held at step a", calledFor("relabelled", "a"))
	testenv.Eventually(t, 30*time.Second, "edited held at step b", calledFor("edited", "b"))
	// Mid-teardown, under the first controller: relabel one object out of
	// its policy, and edit the other policy's steps.
	patch(t, objs["relabelled"], `{"metadata":{"labels":{"app":"other"}}}`)
	editedAt := time.Now()
	steps, _ := json.Marshal([]teardownv1alpha1.Step{hook.step("a"), hook.step("b"), hook.step("c")})
	patch(t, edited, `{"spec":{"steps":`+string(steps)+`}}`)
	mustBeReady(t, edited)
	testenv.Eventually(t, 30*time.Second, "edited restarted at step a of the new version", func(context.Context) (bool, error) {
		return hook.callsOfSince(objs["edited"].UID, "a", editedAt) > 0, nil
	})

	// The switch, as a rolling update makes it.
	if err := before.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	switched := time.Now()
	after := newControllerOf(t, toBin, "after", "", args(toBin)...)
	if err := after.Start(); err != nil {
		t.Fatal(err)
	}
	// Registered after the controllers' cleanups, so it runs first, while
	// the objects and the new controller are as the failure left them.
	t.Cleanup(func() {
		if t.Failed() {
			dumpState(t, ns, after, []client.Object{pol, edited}, objs)
		}
	})
	deleteNow(t, objs["live"])
	// status.boundRecordsSince: from the policy's creation when a release
	// that sets it served it first (the rollback's first controller), so
	// that no unbound record of an object created after counts; from this
	// release's first serving when an earlier release served it before.
	for _, p := range []*teardownv1alpha1.TeardownPolicy{pol, edited} {
		testenv.Eventually(t, 30*time.Second, p.Name+"'s boundRecordsSince", func(ctx context.Context) (bool, error) {
			got := &teardownv1alpha1.TeardownPolicy{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return false, err
			}
			since := got.Status.BoundRecordsSince
			if since == nil {
				return false, nil
			}
			created := got.CreationTimestamp.Time
			if first := fromBin == "" || boundSince; first && !since.Time.Equal(created) || !first && !since.Time.After(created) {
				t.Fatalf("%s: boundRecordsSince %v, created %v (first controller %q)", p.Name, since.Time, created, fromBin)
			}
			return true, nil
		})
	}
	// Every held teardown goes on under the new controller: each object is
	// called again at the step it waits at. A stall is for good (the bug
	// this test was written for, and the one CI found: an object created
	// in the second the new controller made its keys); the bound leaves
	// room for the new controller's build, which the first upgrade of a
	// run waits for (about 35 s on a loaded machine).
	for name, step := range map[string]string{"at-a": "a", "at-b": "b", "relabelled": "a", "edited": "b", "live": "a"} {
		testenv.Eventually(t, 2*time.Minute, name+" called again after the switch", func(context.Context) (bool, error) {
			return hook.callsOfSince(objs[name].UID, step, switched) > 0, nil
		})
	}
	for name, cm := range objs {
		if !exists(t, cm) {
			t.Errorf("%s went before its steps succeeded", name)
		}
	}
	// Let every step succeed: each object goes, after every step of the
	// version in force answered Success.
	openGate("*")
	goneAt := map[string]time.Time{}
	testenv.Eventually(t, 60*time.Second, "every object gone", func(ctx context.Context) (bool, error) {
		for name, cm := range objs {
			if _, ok := goneAt[name]; ok {
				continue
			}
			if !exists(t, cm) {
				goneAt[name] = time.Now()
			}
		}
		return len(goneAt) == len(objs), nil
	})
	for name, steps := range want {
		since := time.Time{}
		if name == "edited" {
			since = editedAt
		}
		for _, step := range steps {
			at, ok := hook.successOf(objs[name].UID, step, since)
			if !ok || at.After(goneAt[name]) {
				t.Errorf("%s went without step %s of the version in force answering Success (at %v, gone by %v)", name, step, at, goneAt[name])
			}
		}
	}
}

// dumpState logs, after a failure, what the cluster and the controller's log
// say of ns: each object's finalizers, labels and annotations (its records),
// each policy's status, and the log's lines about ns (the controller's tail
// is mostly other tests' leftovers).
func dumpState(t *testing.T, ns string, c interface{ Grep(string, int) []string }, pols []client.Object, objs map[string]*corev1.ConfigMap) {
	t.Helper()
	ctx := context.Background()
	for name, cm := range objs {
		got := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			t.Logf("state: %s: %v", name, err)
			continue
		}
		t.Logf("state: %s uid %s created %v deleting %v finalizers %v labels %v annotations %v", name, got.UID, got.CreationTimestamp, got.DeletionTimestamp, got.Finalizers, got.Labels, got.Annotations)
	}
	for _, p := range pols {
		got := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Logf("state: policy %s: %v", p.GetName(), err)
			continue
		}
		status, _ := json.Marshal(got.Status)
		t.Logf("state: policy %s uid %s generation %d status %s", got.Name, got.UID, got.Generation, status)
	}
	for _, l := range c.Grep(`"`+ns, 60) {
		t.Logf("log: %s", l)
	}
}

// patch merges p into obj.
func patch(t *testing.T, obj client.Object, p string) {
	t.Helper()
	if err := k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(p))); err != nil {
		t.Fatalf("patching %s: %v", obj.GetName(), err)
	}
}

// exists says whether obj (this UID) is still there.
func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	got := &corev1.ConfigMap{}
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), got)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	return got.UID == obj.GetUID()
}
