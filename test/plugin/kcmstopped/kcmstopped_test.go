/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kcmstopped

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// leaseDuration is kube-controller-manager's --leader-elect-lease-duration
// here (15s by default), so that its Lease is past it seconds after it stops.
const leaseDuration = 4 * time.Second

var (
	env        *testenv.Env
	kubeconfig string
	cs         kubernetes.Interface
)

// TestMain starts a control plane whose kube-controller-manager elects
// itself leader with a 4 s Lease and runs neither the garbage collector nor
// the namespace controller: what it is asked to remove stays, whether it
// runs or not, so the same objects are explained before and after it stops.
func TestMain(m *testing.M) {
	plugintest.Main(m, testenv.Options{
		Controllers:           []string{"clusterrole-aggregation"},
		ControllerManagerArgs: testenv.LeaderElection(leaseDuration),
	}, func(e *testenv.Env) {
		env, kubeconfig = e, e.Kubeconfig
		cs = kubernetes.NewForConfigOrDie(e.Config)
	})
}

// run runs kubectl-teardown against this control plane.
func run(args ...string) plugintest.Result {
	return plugintest.Run(plugin.Execute, kubeconfig, args...)
}

// explain runs explain -o json on target (with -n ns when ns is set).
func explain(t *testing.T, target, ns string) (*diagnose.Report, int) {
	t.Helper()
	args := []string{"explain", target, "-o", "json"}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	r := run(args...)
	if r.Code != plugin.ExitOK && r.Code != plugin.ExitBlocked {
		t.Fatalf("explain %s: exit %d: %s", target, r.Code, r.Err)
	}
	return plugintest.DecodeReport(t, r), r.Code
}

// text runs explain (or status) in its text form and records it with
// -record.
func text(t *testing.T, file string, args ...string) plugintest.Result {
	t.Helper()
	r := run(args...)
	plugintest.Record(t, file, r, args...)
	return r
}

func rootCauses(rep *diagnose.Report) []string {
	var out []string
	for _, r := range rep.RootBlockers {
		out = append(out, r.Cause)
	}
	return out
}

// kcm is the report's kube-controller-manager liveness.
func kcm(t *testing.T, rep *diagnose.Report) diagnose.ControllerLiveness {
	t.Helper()
	for _, c := range rep.Controllers {
		if c.Component == "kube-controller-manager" {
			return c
		}
	}
	t.Fatalf("no kube-controller-manager liveness in the report:\n%s", plugintest.Dump(rep))
	return diagnose.ControllerLiveness{}
}

func statusBlockers(t *testing.T) map[string]string {
	t.Helper()
	r := run("status", "-A", "-o", "json")
	if r.Code != plugin.ExitOK {
		t.Fatalf("status: exit %d: %s", r.Code, r.Err)
	}
	st := &plugin.StatusReport{}
	if err := json.Unmarshal([]byte(r.Out), st); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range st.Items {
		out[it.Object.Kind+" "+it.Object.Name] = it.Blocker
	}
	return out
}

func create(t *testing.T, ns string, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	got, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// foregroundOwner creates an owner and one dependent of it, then deletes
// the owner with propagationPolicy=Foreground.
func foregroundOwner(t *testing.T, ns, name string, block bool) {
	t.Helper()
	o := create(t, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}})
	create(t, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-config", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: o.UID, BlockOwnerDeletion: ptr.To(block)}}}})
	fg := metav1.DeletePropagationForeground
	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
}

var notRenewing = regexp.MustCompile(`kube-controller-manager is not renewing its Lease: Lease kube-system/kube-controller-manager \(holder "[^"]+"\) was last renewed \d+s ago, \d+s past its 4s lease duration`)

// Family 1 of issue 11: kube-controller-manager stops; its Lease stays,
// no longer renewed. A namespace held by the kubernetes token and an owner
// held by foregroundDeletion then wait on nothing that will ever act:
// explain must name kube-controller-manager as not renewing, for how long,
// and exit 3, never "nothing is blocked". Before it stops (the Lease
// renewing) the answers are the old ones. With the Lease gone, explain says
// it cannot tell, unless the control plane is seen to elect leaders.
func TestControllerManagerStopped(t *testing.T) {
	plugintest.NeedCluster(t, cs)
	ctx := t.Context()
	testenv.Eventually(t, 60*time.Second, "kube-controller-manager to hold its Lease", func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", err
	})

	for _, ns := range []string{"shop", "web"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(t, "shop", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}})
	if err := cs.CoreV1().Namespaces().Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	foregroundOwner(t, "web", "frontend", true)
	foregroundOwner(t, "web", "sidecar", false)
	// A PersistentVolume held by pv-protection alone: only
	// kube-controller-manager's pv-protection controller removes it.
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "kept", Finalizers: []string{"kubernetes.io/pv-protection"}},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/kept"}}}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumes().Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Renewing: the old answers. The namespace (seconds old, no condition
	// yet) and the owner with no blocking dependent are progressing; the
	// owner with a blocking dependent waits on it (E1).
	rep, code := explain(t, "namespace/shop", "")
	if l := kcm(t, rep); l.State != diagnose.LivenessRenewing || l.Clock != diagnose.ClockAPIServer || code != plugin.ExitOK || rep.Blocked {
		t.Fatalf("renewing, namespace (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	if f := plugintest.Find(rep, "NamespaceContentCleanup", ""); f == nil || f.Owner.State != diagnose.OwnerAlive || !strings.Contains(f.Owner.Evidence[0], "and renewing: renewed ") {
		t.Errorf("renewing, namespace owner: %+v", f)
	}
	rep, code = explain(t, "configmap/sidecar", "web")
	if f := plugintest.Find(rep, diagnose.CauseGCIdle, ""); f == nil || f.Severity != diagnose.SeverityWaiting || code != plugin.ExitOK || f.Owner.State != diagnose.OwnerAlive {
		t.Errorf("renewing, foreground owner without blocking dependents (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	rep, code = explain(t, "configmap/frontend", "web")
	if f := plugintest.Find(rep, diagnose.CauseForegroundDependents, ""); f == nil || code != plugin.ExitBlocked || plugintest.Find(rep, diagnose.CauseGCIdle, "") != nil {
		t.Errorf("renewing, foreground owner with a blocking dependent (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	if r := text(t, "explain-kcm-renewing.txt", "explain", "namespace/shop"); r.Code != plugin.ExitOK || !strings.Contains(r.Out, "PROGRESSING: nothing is blocked") {
		t.Errorf("renewing, text (exit %d):\n%s", r.Code, r.Out)
	}
	for obj, b := range statusBlockers(t) {
		if strings.Contains(b, "stopped") {
			t.Errorf("status %s while kube-controller-manager renews: %q", obj, b)
		}
	}

	// Stop it, and wait for its Lease to be past its duration.
	stopped := time.Now()
	if err := env.StopControllerManager(); err != nil {
		t.Fatal(err)
	}
	var l diagnose.ControllerLiveness
	testenv.Eventually(t, 30*time.Second, "the Lease to be past its duration", func(ctx context.Context) (bool, error) {
		rep, _ = explain(t, "namespace/shop", "")
		l = kcm(t, rep)
		return l.State == diagnose.LivenessNotRenewing, nil
	})
	t.Logf("kube-controller-manager judged not renewing %s after it stopped: %s", time.Since(stopped).Round(100*time.Millisecond), l.Evidence)
	// Each run knows the API server's clock from a Date header, to the
	// second (±0.5 s): a run a moment later may still see the Lease
	// within its duration. After a second, every run sees it past.
	time.Sleep(1200 * time.Millisecond)
	if l.LeaseDurationSeconds != 4 || l.PastDuration == "" || l.Clock != diagnose.ClockAPIServer {
		t.Errorf("liveness: %+v", l)
	}

	// The namespace: A11, root, naming kube-controller-manager.
	rep, code = explain(t, "namespace/shop", "")
	f := plugintest.Find(rep, diagnose.CauseNamespaceControllerIdle, "")
	if f == nil || !f.Root || code != plugin.ExitBlocked || !rep.Blocked {
		t.Fatalf("not renewing, namespace (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	if !notRenewing.MatchString(f.Message) || !strings.Contains(f.Message, "never removes the kubernetes token") {
		t.Errorf("A11 message = %q", f.Message)
	}
	if !strings.Contains(f.Remedy, "kube-controller-manager's pod and logs") || !strings.Contains(f.Remedy, "do not strip finalizers") {
		t.Errorf("A11 remedy = %q", f.Remedy)
	}
	if c := plugintest.Find(rep, "NamespaceContentCleanup", ""); c.Owner.State != diagnose.OwnerDown {
		t.Errorf("namespace controller state %q", c.Owner.State)
	}

	// The PersistentVolume: its pv-protection finalizer waits on a
	// controller of kube-controller-manager, so it is blocked now, never
	// "nothing is blocked" (explain named no owner for it before).
	rep, code = explain(t, "persistentvolume/kept", "")
	if f := plugintest.Find(rep, diagnose.CausePVBound, ""); f == nil || f.Severity != diagnose.SeverityBlocker || !f.Root || code != plugin.ExitBlocked ||
		f.Owner == nil || f.Owner.State != diagnose.OwnerDown || !notRenewing.MatchString(f.Message) {
		t.Errorf("not renewing, PersistentVolume held by pv-protection (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	if r := run("explain", "persistentvolume/kept"); r.Code != plugin.ExitBlocked || strings.Contains(r.Out, "nothing is blocked") {
		t.Errorf("not renewing, PersistentVolume text (exit %d):\n%s", r.Code, r.Out)
	}

	// Both owners: E2, root, naming kube-controller-manager, at once (the
	// default --gc-stall-after is 2 minutes).
	for _, name := range []string{"frontend", "sidecar"} {
		rep, code = explain(t, "configmap/"+name, "web")
		f := plugintest.Find(rep, diagnose.CauseGCIdle, "")
		if f == nil || !f.Root || code != plugin.ExitBlocked || strings.Join(rootCauses(rep), ",") != diagnose.CauseGCIdle {
			t.Errorf("not renewing, %s (exit %d):\n%s", name, code, plugintest.Dump(rep))
			continue
		}
		if !notRenewing.MatchString(f.Message) || f.Owner.State != diagnose.OwnerDown || !strings.Contains(f.Remedy, "bring kube-controller-manager back") {
			t.Errorf("%s E2: message %q, owner %+v, remedy %q", name, f.Message, f.Owner, f.Remedy)
		}
	}
	for file, args := range map[string][]string{
		"explain-kcm-namespace.txt":  {"explain", "namespace/shop"},
		"explain-kcm-foreground.txt": {"explain", "configmap/frontend", "-n", "web"},
	} {
		r := text(t, file, args...)
		if r.Code != plugin.ExitBlocked || strings.Contains(r.Out, "nothing is blocked") || !strings.Contains(r.Out, "is not renewing its Lease") {
			t.Errorf("not renewing, %v (exit %d):\n%s", args, r.Code, r.Out)
		}
	}
	st := statusBlockers(t)
	for obj, want := range map[string]string{
		"Namespace shop":     "kubernetes: namespace controller stopped: kube-controller-manager not renewing its Lease, last renewed ",
		"ConfigMap frontend": "foregroundDeletion: garbage collector stopped: kube-controller-manager not renewing its Lease, last renewed ",
		"ConfigMap sidecar":  "foregroundDeletion: garbage collector stopped: kube-controller-manager not renewing its Lease, last renewed ",
	} {
		if !strings.HasPrefix(st[obj], want) {
			t.Errorf("status %s = %q, want %q...", obj, st[obj], want)
		}
	}
	text(t, "status-kcm.txt", "status", "-A")

	// Gone: no Lease at all. Where nothing shows the control plane elects
	// leaders (leader election off, a managed control plane), explain
	// cannot tell and says so instead of "nothing is blocked"; with a
	// kube-scheduler Lease, the missing one means none runs.
	if err := cs.CoordinationV1().Leases("kube-system").Delete(ctx, "kube-controller-manager", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, code = explain(t, "namespace/shop", "")
	if l := kcm(t, rep); l.State != diagnose.LivenessGone || l.LeaderElection || code != plugin.ExitOK {
		t.Errorf("gone, no leader election (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	if r := text(t, "explain-kcm-gone.txt", "explain", "namespace/shop"); r.Code != plugin.ExitOK || strings.Contains(r.Out, "nothing is blocked") || !strings.Contains(r.Out, "WAITING: no blocker found yet, but it waits on kube-controller-manager, whose liveness is not known: there is no Lease kube-system/kube-controller-manager") {
		t.Errorf("gone, text (exit %d):\n%s", r.Code, r.Out)
	}
	now := metav1.NewMicroTime(time.Now())
	scheduler := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("master-0_5f2e"), LeaseDurationSeconds: ptr.To[int32](15), AcquireTime: &now, RenewTime: &now}}
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, scheduler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, code = explain(t, "namespace/shop", "")
	f = plugintest.Find(rep, diagnose.CauseNamespaceControllerIdle, "")
	if l := kcm(t, rep); l.State != diagnose.LivenessGone || !l.LeaderElection || code != plugin.ExitBlocked || f == nil || !f.Root ||
		!strings.Contains(f.Message, "kube-controller-manager is not running: there is no Lease kube-system/kube-controller-manager although the control plane elects leaders (Lease kube-system/kube-scheduler exists)") {
		t.Errorf("gone where leaders are elected (exit %d):\n%s", code, plugintest.Dump(rep))
	}
	rep, code = explain(t, "configmap/sidecar", "web")
	if f := plugintest.Find(rep, diagnose.CauseGCIdle, ""); f == nil || !f.Root || code != plugin.ExitBlocked || f.Owner.State != diagnose.OwnerMissing {
		t.Errorf("gone where leaders are elected, sidecar (exit %d):\n%s", code, plugintest.Dump(rep))
	}
}
