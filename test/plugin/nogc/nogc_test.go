/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package nogc

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	kubeconfig string
	cs         kubernetes.Interface
)

// TestMain starts a control plane whose kube-controller-manager runs the
// namespace controller only: nothing acts on foregroundDeletion or orphan.
func TestMain(m *testing.M) {
	plugintest.Main(m, testenv.Options{Controllers: []string{"namespace"}}, func(e *testenv.Env) {
		kubeconfig = e.Kubeconfig
		cs = kubernetes.NewForConfigOrDie(e.Config)
	})
}

// run runs kubectl-teardown against this control plane.
func run(args ...string) plugintest.Result {
	return plugintest.Run(plugin.Execute, kubeconfig, args...)
}

// explain runs `explain configmap/NAME -n NS -o json` with extra flags.
func explain(t *testing.T, ns, name string, flags ...string) (*diagnose.Report, int) {
	t.Helper()
	r := run(append([]string{"explain", "configmap/" + name, "-n", ns, "-o", "json"}, flags...)...)
	if r.Code != plugin.ExitOK && r.Code != plugin.ExitBlocked {
		t.Fatalf("explain: exit %d: %s", r.Code, r.Err)
	}
	return plugintest.DecodeReport(t, r), r.Code
}

// gcFinding is the finding of the garbage collector's finalizer.
func gcFinding(t *testing.T, rep *diagnose.Report, finalizer string) diagnose.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Finalizer == finalizer {
			return f
		}
	}
	t.Fatalf("no finding for %s:\n%s", finalizer, plugintest.Dump(rep))
	return diagnose.Finding{}
}

// summary is what the tests pin of a finding: everything but its wording.
type summary struct {
	Cause, Catalog, Severity, FixOwner, Remedy, Leaks string
	OwnerComponent, OwnerState                        string
	Root                                              bool
	Children                                          []string
}

func summarize(f diagnose.Finding) summary {
	s := summary{Cause: f.Cause, Catalog: f.Catalog, Severity: f.Severity, FixOwner: f.FixOwner, Remedy: f.Remedy, Leaks: f.Leaks, Root: f.Root}
	if f.Owner != nil {
		s.OwnerComponent, s.OwnerState = f.Owner.Component, f.Owner.State
	}
	for _, c := range f.Children {
		name := c.Cause + " " + c.Severity
		if c.Object != nil {
			name += " " + c.Object.Name
		}
		s.Children = append(s.Children, name)
	}
	slices.Sort(s.Children)
	return s
}

// rootCauses lists the report's root blockers as "Cause Name".
func rootCauses(rep *diagnose.Report) []string {
	var out []string
	for _, r := range rep.RootBlockers {
		name := ""
		if r.Object != nil {
			name = r.Object.Name
		}
		out = append(out, r.Cause+" "+name)
	}
	return out
}

func newNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// owner creates a ConfigMap and dependents of it, blocking its deletion or
// not, then deletes it with policy.
func owner(t *testing.T, ns, name string, policy metav1.DeletionPropagation, block bool, dependents ...string) *corev1.ConfigMap {
	t.Helper()
	ctx := t.Context()
	o, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dependents {
		dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: d, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: o.UID, BlockOwnerDeletion: ptr.To(block)}}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	if o, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the owner went without a garbage collector: %v", err)
	}
	return o
}

// settle waits until every object deleted so far is older than the 1s
// --gc-stall-after the tests give explain, and shows that nothing acted on
// them meanwhile: without a garbage collector the owners keep their
// finalizer and the dependents stay.
func settle(t *testing.T) {
	t.Helper()
	select {
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	case <-time.After(3 * time.Second):
	}
}

const stall = "--gc-stall-after=1s"

// E2: without the garbage collector, an owner deleted with
// propagationPolicy=Foreground keeps foregroundDeletion and its dependents
// are never deleted; one deleted with Orphan keeps orphan and its
// dependents keep their ownerReference. Inside --gc-stall-after (2 minutes
// by default) explain reports what it waits on; past it, the garbage
// collector not progressing.
func TestExplainGarbageCollectorNotRunning(t *testing.T) {
	plugintest.NeedCluster(t, cs)
	const ns = "shop"
	newNamespace(t, ns)
	fg := owner(t, ns, "frontend", metav1.DeletePropagationForeground, true, "frontend-config", "frontend-cache")
	if diff := cmp.Diff([]string{"foregroundDeletion"}, fg.Finalizers); diff != "" {
		t.Fatalf("finalizers of the foreground owner (-want +got):\n%s", diff)
	}
	owner(t, ns, "sidecar", metav1.DeletePropagationForeground, false, "sidecar-config")
	orph := owner(t, ns, "legacy", metav1.DeletePropagationOrphan, true, "legacy-data")
	if diff := cmp.Diff([]string{"orphan"}, orph.Finalizers); diff != "" {
		t.Fatalf("finalizers of the orphaning owner (-want +got):\n%s", diff)
	}

	// With the default threshold, seconds after the deletion: no E2. The
	// foreground owner waits on its dependents (E1, which names them), the
	// orphaning one on the patches of its dependents (E3), and the owner
	// with nothing left to wait on is only waiting.
	rep, code := explain(t, ns, "frontend")
	if f := gcFinding(t, rep, "foregroundDeletion"); f.Cause != diagnose.CauseForegroundDependents || f.Catalog != "E1" {
		t.Errorf("foreground owner at once (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	rep, code = explain(t, ns, "legacy")
	if f := gcFinding(t, rep, "orphan"); f.Cause != "OrphaningDependents" || f.Catalog != "E3" || code != plugin.ExitOK {
		t.Errorf("orphaning owner at once (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	rep, code = explain(t, ns, "sidecar")
	if f := gcFinding(t, rep, "foregroundDeletion"); f.Cause != diagnose.CauseGCIdle || f.Severity != diagnose.SeverityWaiting || code != plugin.ExitOK {
		t.Errorf("foreground owner with no blocking dependent at once (exit %d):\n%s", code, plugintest.Dump(rep))
	}

	settle(t)
	for _, d := range []string{"frontend-config", "frontend-cache", "sidecar-config", "legacy-data"} {
		got, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), d, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil || len(got.OwnerReferences) != 1 {
			t.Fatalf("dependent %s was acted on, is a garbage collector running? %v %+v", d, err, got)
		}
	}

	const gcOwner = "garbage collector (kube-controller-manager)"
	fixRemedy := "run kube-controller-manager with the garbage collector (check its --controllers flag, and its log for informers that do not sync, such as CRDs with broken conversion webhooks); it then deletes the dependents and removes the finalizer. Without it nothing removes the finalizer: delete the dependents yourself, then remove foregroundDeletion, which is low-risk once nothing depends on the owner"
	idleRemedy := "check kube-controller-manager and CRDs with broken conversion webhooks; removing the finalizer is low-risk once nothing depends on it"
	for _, tc := range []struct {
		name, finalizer string
		want            summary
		message         []string
	}{{
		name: "frontend", finalizer: "foregroundDeletion",
		want: summary{Cause: diagnose.CauseGCIdle, Catalog: "E2", Severity: diagnose.SeverityBlocker, FixOwner: "cluster operator", Remedy: fixRemedy,
			Leaks:          "nothing yet; removing the finalizer now would leave the dependents behind with an ownerReference to a deleted owner, for a garbage collector to delete later",
			OwnerComponent: gcOwner, OwnerState: diagnose.OwnerUnknown, Root: true,
			Children: []string{"BlockingDependent waiting frontend-cache", "BlockingDependent waiting frontend-config"}},
		message: []string{"waits for 2 dependent(s) with blockOwnerDeletion=true, but the garbage collector has deleted none of them in ", "longer than the 1s it is given, --gc-stall-after", "it is not running or not progressing"},
	}, {
		name: "sidecar", finalizer: "foregroundDeletion",
		want: summary{Cause: diagnose.CauseGCIdle, Catalog: "E2", Severity: diagnose.SeverityBlocker, FixOwner: "cluster operator", Remedy: idleRemedy,
			Leaks:          "nothing: the garbage collector finalizers only gate dependents",
			OwnerComponent: gcOwner, OwnerState: diagnose.OwnerUnknown, Root: true},
		message: []string{`no dependent with blockOwnerDeletion=true remains; the garbage collector should remove "foregroundDeletion"`, "it is not progressing (longer than the 1s it is given, --gc-stall-after)"},
	}, {
		name: "legacy", finalizer: "orphan",
		want: summary{Cause: diagnose.CauseGCIdle, Catalog: "E2", Severity: diagnose.SeverityBlocker, FixOwner: "cluster operator",
			Remedy:         "fix kube-controller-manager's garbage collector (its --controllers flag; CRDs with broken conversion webhooks); without it, remove the ownerReference from the dependents yourself (that is what orphaning does), then remove orphan",
			Leaks:          "nothing once the dependents no longer reference it; removing orphan first lets a garbage collector delete the dependents later, which orphaning was meant to prevent",
			OwnerComponent: gcOwner, OwnerState: diagnose.OwnerUnknown, Root: true},
		message: []string{`1 dependents still reference it although they can be patched; the garbage collector should remove "orphan"`, "it is not progressing (longer than the 1s it is given, --gc-stall-after)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rep, code := explain(t, ns, tc.name, stall)
			f := gcFinding(t, rep, tc.finalizer)
			if diff := cmp.Diff(tc.want, summarize(f)); diff != "" {
				t.Errorf("E2 finding (-want +got):\n%s\n%s", diff, plugintest.Dump(rep))
			}
			for _, m := range tc.message {
				if !strings.Contains(f.Message, m) {
					t.Errorf("message %q lacks %q", f.Message, m)
				}
			}
			if diff := cmp.Diff([]string{diagnose.CauseGCIdle + " " + tc.name}, rootCauses(rep)); diff != "" {
				t.Errorf("root blockers (-want +got):\n%s", diff)
			}
			if code != plugin.ExitBlocked || !rep.Blocked {
				t.Errorf("exit %d, blocked %v", code, rep.Blocked)
			}
		})
	}

	// kube-controller-manager here runs without leader election, so it has
	// no Lease. A stale one, as a stopped kube-controller-manager leaves
	// behind, is evidence that does not need the threshold: E2 at once,
	// with the default --gc-stall-after, on an owner deleted just now.
	renewed := metav1.NewMicroTime(time.Now().Add(-10 * time.Minute))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("master-0_0b7c"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &renewed}}
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner(t, ns, "checkout", metav1.DeletePropagationForeground, true, "checkout-config")
	rep, code = explain(t, ns, "checkout")
	f := gcFinding(t, rep, "foregroundDeletion")
	stoppedRemedy := "bring kube-controller-manager back: check kube-controller-manager's pod and logs (kubectl -n kube-system get pods -l component=kube-controller-manager; kubectl -n kube-system logs -l component=kube-controller-manager --previous), or its static pod manifest or systemd unit on the control-plane nodes; its garbage collector then deletes the dependents and removes the finalizer. Without it nothing removes the finalizer: delete the dependents yourself, then remove foregroundDeletion, which is low-risk once nothing depends on the owner"
	want := summary{Cause: diagnose.CauseGCIdle, Catalog: "E2", Severity: diagnose.SeverityBlocker, FixOwner: "cluster operator", Remedy: stoppedRemedy,
		Leaks:          "nothing yet; removing the finalizer now would leave the dependents behind with an ownerReference to a deleted owner, for a garbage collector to delete later",
		OwnerComponent: gcOwner, OwnerState: diagnose.OwnerDown, Root: true,
		Children: []string{"BlockingDependent waiting checkout-config"}}
	if diff := cmp.Diff(want, summarize(f)); diff != "" || code != plugin.ExitBlocked {
		t.Errorf("E2 from a stale Lease (exit %d; -want +got):\n%s\n%s", code, diff, plugintest.Dump(rep))
	}
	// The ages count from the Lease's creation to the report, a few
	// seconds on a loaded machine.
	stale := `Lease kube-system/kube-controller-manager \(holder "master-0_0b7c"\) was last renewed 10m([0-9]s)? ago, 9m[45][0-9]s past its 15s lease duration`
	if m := regexp.MustCompile(`kube-controller-manager is not renewing its Lease: ` + stale); !m.MatchString(f.Message) {
		t.Errorf("message %q lacks %q", f.Message, m)
	}
	if len(f.Owner.Evidence) != 1 || !regexp.MustCompile(`^`+stale).MatchString(f.Owner.Evidence[0]) {
		t.Errorf("owner evidence = %q", f.Owner.Evidence)
	}

	// The flag takes a positive duration only.
	if r := run("explain", "configmap/checkout", "-n", ns, "--gc-stall-after=0s"); r.Code != plugin.ExitUsage || !strings.Contains(r.Err, "--gc-stall-after must be positive") {
		t.Errorf("--gc-stall-after=0s: exit %d: %s", r.Code, r.Err)
	}
}
