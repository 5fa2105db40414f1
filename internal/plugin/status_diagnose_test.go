/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// statusRow runs status -n ns -o json and returns the row of name.
func statusRow(t *testing.T, ns, name string) (StatusRow, *StatusReport) {
	t.Helper()
	r := cli(t, "", nil, "status", "-n", ns, "-o", "json")
	rep := &StatusReport{}
	if err := json.Unmarshal([]byte(r.out), rep); err != nil {
		t.Fatalf("status: %v\n%s%s", err, r.out, r.err)
	}
	for _, it := range rep.Items {
		if it.Object.Name == name {
			return it, rep
		}
	}
	t.Fatalf("status lists no %s:\n%s", name, r.out)
	return StatusRow{}, nil
}

// Status's line carries explain's root cause: a finalizer whose owner
// (here the Strimzi topic operator, from the catalog) is not running is
// FinalizerOwnerGone, not "waiting for" it, and --exit-blocked exits with
// code 3; once the owner runs, the line says it waits on it and that it is
// alive, and --exit-blocked exits with 0.
func TestStatusCarriesRootCause(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	fin := "strimzi.io/topic-operator"
	stuckConfigMap(t, ns, "topic", fin)

	row, rep := statusRow(t, ns, "topic")
	if !row.Blocked || row.Cause != diagnose.CauseOwnerGone || rep.Blocked != 1 ||
		!strings.HasPrefix(row.Blocker, fin+": FinalizerOwnerGone [B1]: Strimzi topic operator owns") ||
		!strings.Contains(row.Blocker, "does not look alive (missing)") || !strings.Contains(row.Blocker, "no Deployment, StatefulSet, DaemonSet, pod or Lease") {
		t.Errorf("owner missing: %+v", row)
	}
	if len(row.RootBlockers) != 1 || row.RootBlockers[0].Remedy == "" {
		t.Errorf("root blockers: %+v", row.RootBlockers)
	}
	if r := cli(t, "", nil, "status", "-n", ns); r.code != ExitOK || !strings.Contains(r.out, "FinalizerOwnerGone") {
		t.Errorf("status without --exit-blocked: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if r := cli(t, "", nil, "status", "-n", ns, "--exit-blocked"); r.code != ExitBlocked || !strings.Contains(r.err, "blocked: 1 object(s) held by a blocker") {
		t.Errorf("status --exit-blocked: exit %d\n%s%s", r.code, r.out, r.err)
	}

	runningDeployment(t, ns, "strimzi-topic-operator", "topic-operator")
	plugintest.GrantClusterWide(t, cs, ns, "topic-operator", "", "configmaps")
	row, rep = statusRow(t, ns, "topic")
	// An owner that runs is no evidence of progress (issue 26): with no
	// blocker, no bounded wait and no change since the deletion, it is
	// stalled, which --exit-blocked catches.
	want := fmt.Sprintf("%s: stalled, waiting for Strimzi topic operator (alive: Deployment %s/strimzi-topic-operator has 1 of 1 replicas ready)", fin, ns)
	if row.Blocked || !row.Stalled || row.Blocker != want || rep.Blocked != 0 || rep.Stalled != 1 {
		t.Errorf("owner alive: %+v, want %q", row, want)
	}
	if r := cli(t, "", nil, "status", "-n", ns, "--exit-blocked"); r.code != ExitBlocked || !strings.Contains(r.err, "blocked: 0 object(s) held by a blocker, 1 stalled") {
		t.Errorf("status --exit-blocked, nothing blocked but stalled: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if r := cli(t, "", nil, "status", "-n", ns, "--exit-blocked", "--watch"); r.code != ExitUsage {
		t.Errorf("--exit-blocked --watch: exit %d, want %d", r.code, ExitUsage)
	}
}

var stuckName = regexp.MustCompile(`stuck-[0-9]+`)

// Status explains every Terminating object with one list per kind (and one
// SubjectAccessReview per owner and verb): the requests it sends do not
// grow with the number of stuck objects.
func TestStatusRequestsDoNotGrowWithObjects(t *testing.T) {
	needCluster(t)
	requests := func(n int) (int, []string) {
		ns := newNamespace(t)
		// The owner runs, without the right to patch ConfigMaps: B4, one
		// SubjectAccessReview per verb, and one by name for each of the
		// first 8 objects (a grant by resourceNames), not per object.
		runningDeployment(t, ns, "cnrm-controller-manager", "cnrm")
		for i := range n {
			name := fmt.Sprintf("stuck-%d", i)
			// An owner no other test runs (the catalog's Config Connector).
			stuckConfigMap(t, ns, name, "cnrm.cloud.google.com/finalizer")
			if i%2 == 0 {
				// Terminating pods on a node that is gone, for the pod
				// checks (pods, nodes).
				boundPod(t, ns, name, "gone-node", nil)
				if err := cs.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		log := &requestLog{}
		r := cli(t, "", log, "status", "-n", ns, "-o", "json")
		rep := &StatusReport{}
		if err := json.Unmarshal([]byte(r.out), rep); err != nil || rep.Blocked < n {
			t.Fatalf("status of %d stuck objects: %v, %d blocked\n%s%s", n, err, rep.Blocked, r.out, r.err)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.reqs), append([]string(nil), log.reqs...)
	}
	few, _ := requests(10)
	many, reqs := requests(30)
	t.Logf("requests: %d for 10 stuck objects, %d for 30", few, many)
	if many > few+2 {
		byPath := map[string]int{}
		for _, r := range reqs {
			byPath[stuckName.ReplaceAllString(strings.SplitN(r, "?", 2)[0], "stuck-N")]++
		}
		var lines []string
		for p, n := range byPath {
			if n > 1 {
				lines = append(lines, fmt.Sprintf("%d %s", n, p))
			}
		}
		t.Errorf("status sent %d requests for 30 stuck objects, %d for 10; repeated:\n%s", many, few, strings.Join(lines, "\n"))
	}
}

// A running owner granted the right to write one object by name
// (resourceNames) can remove its finalizer: status must not call it
// OwnerLacksRBAC because the question about every ConfigMap of the
// namespace was denied. Another object it may not write still is.
func TestStatusHonoursGrantsByName(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	fin := "cnrm.cloud.google.com/finalizer"
	runningDeployment(t, ns, "cnrm-controller-manager", "cnrm")
	stuckConfigMap(t, ns, "named", fin)
	stuckConfigMap(t, ns, "unnamed", fin)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cnrm-named", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"named"}, Verbs: []string{"get", "patch", "update"}}}}
	if _, err := cs.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cnrm-named", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "cnrm"}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitAllowed(t.Context(), cs, testenv.Access(rbacv1.ServiceAccountKind, ns, "cnrm",
		authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "configmaps", Name: "named"})); err != nil {
		t.Fatal(err)
	}
	named, _ := statusRow(t, ns, "named")
	if named.Cause == diagnose.CauseOwnerLacksRBAC || named.Blocked {
		t.Errorf("an owner granted patch by name: %+v, want no OwnerLacksRBAC", named)
	}
	unnamed, _ := statusRow(t, ns, "unnamed")
	if unnamed.Cause != diagnose.CauseOwnerLacksRBAC {
		t.Errorf("an owner that may not write the object: %+v, want OwnerLacksRBAC", unnamed)
	}
}
