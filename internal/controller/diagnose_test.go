/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// blockedGauge reads teardown_blocked_objects' series of policy: cause to
// value.
func blockedGauge(t *testing.T, policy string) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "teardown_blocked_objects" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["policy"] == policy {
				out[labels["cause"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestDiagnosisNamesTheRootBlocker: a guarded object whose delete step waits
// on a ConfigMap held by a finalizer nobody removes is diagnosed by the
// controller itself (the suite runs it with --diagnose-after=2s): the
// policy's status.blockedObjects names the ConfigMap and the finalizer, a
// TerminationBlocked Event lands on the guarded object, and
// teardown_blocked_objects counts it. Once the finalizer goes, the entry
// and the metric's series go too.
func TestDiagnosisNamesTheRootBlocker(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	name := "diagnose-" + ns
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns,
		Labels: map[string]string{"leftover": ns}, Finalizers: []string{"example.com/never"}}}
	create(t, held)
	t.Cleanup(func() { releaseNever(held) })
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("guard", ns)}},
			Steps: []teardownv1alpha1.Step{{Name: "delete-leftovers", Delete: &teardownv1alpha1.DeleteAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("leftover", ns)}},
			}}},
		},
	}
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	mustBeReady(t, pol)
	guarded := labelled(ns, "guarded", "guard", ns)
	create(t, guarded)
	testenv.Eventually(t, 20*time.Second, "the object guarded", func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(guarded), guarded); err != nil {
			return false, err
		}
		return len(guarded.Finalizers) > 0, nil
	})
	del(t, guarded)

	blocked := waitForDiagnosis(t, pol, guarded, "", "")
	if blocked.Step != "delete-leftovers" {
		t.Errorf("blockedObjects step = %q, want delete-leftovers", blocked.Step)
	}
	diag := blocked.Diagnosis
	if diag.Blocker == nil || diag.Blocker.Kind != "ConfigMap" || diag.Blocker.Namespace != ns || diag.Blocker.Name != held.Name {
		t.Errorf("diagnosis.blocker = %+v, want ConfigMap %s/%s", diag.Blocker, ns, held.Name)
	}
	if !strings.Contains(diag.Message, "example.com/never") {
		t.Errorf("diagnosis.message = %q, want the finalizer example.com/never named", diag.Message)
	}
	if diag.Cause == "" || diag.Since.IsZero() {
		t.Errorf("diagnosis = %+v, want a cause and since", diag)
	}
	note := waitForEvent(t, ns, guarded.Name, teardownv1alpha1.TerminationBlockedReason)
	if !strings.Contains(note, diag.Cause) || !strings.Contains(note, "example.com/never") || !strings.Contains(note, "step delete-leftovers") {
		t.Errorf("TerminationBlocked Event note = %q, want the cause %s, the step and the finalizer", note, diag.Cause)
	}
	testenv.Eventually(t, 10*time.Second, "teardown_blocked_objects{cause="+diag.Cause+"} 1", func(context.Context) (bool, error) {
		return blockedGauge(t, name)[diag.Cause] == 1, nil
	})
	// One Event per cause, not one per pass (the suite diagnoses every 2 s).
	time.Sleep(5 * time.Second)
	if n := countEvents(t, ns, guarded.Name, teardownv1alpha1.TerminationBlockedReason); n != 1 {
		t.Errorf("%d TerminationBlocked Events after several passes with the same cause, want 1", n)
	}

	releaseNever(held)
	testenv.Eventually(t, 20*time.Second, "the guarded object to go", testenv.Gone(k8s, guarded))
	testenv.Eventually(t, 10*time.Second, "the metric's series to go", func(context.Context) (bool, error) {
		return len(blockedGauge(t, name)) == 0, nil
	})
	waitNoBlockedObjects(t, pol)
}

// releaseNever removes example.com/never from obj, as its owner would.
func releaseNever(obj client.Object) {
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return
	}
	obj.SetFinalizers(nil)
	_ = k8s.Update(ctx, obj)
}

func countEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	n := 0
	list := &eventsv1.EventList{}
	if err := k8s.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Name != name || e.Reason != reason {
			continue
		}
		// The recorder folds repeats into a series.
		if e.Series != nil {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n
}

// TestDiagnoseKindsNamespace: with --diagnose-kinds=namespaces, a namespace
// stuck Terminating because of a ConfigMap whose finalizer nobody removes
// is diagnosed though no policy guards it: a TerminationBlocked Event on
// the namespace names the finalizer, and teardown_blocked_objects counts
// it with policy="". Once the finalizer goes, so does the series. It runs
// its own Diagnoser (the suite's runs without kinds), pass by pass.
func TestDiagnoseKindsNamespace(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns, Finalizers: []string{"example.com/never"}}}
	create(t, held)
	t.Cleanup(func() { releaseNever(held) })
	del(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})

	kube := kubernetes.NewForConfigOrDie(cfg)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	broadcaster.StartRecordingToSink(t.Context().Done())
	t.Cleanup(broadcaster.Shutdown)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := diagnosis.ParseDiagnoseKinds("namespaces")
	if err != nil {
		t.Fatal(err)
	}
	d := &diagnosis.Diagnoser{
		After: time.Second, Every: time.Second, Tick: time.Second, Kinds: kinds,
		Config: cfg, Mapper: mapper, Index: policy.NewIndex(),
		Recorder: broadcaster.NewRecorder(k8s.Scheme(), "teardown-controller-test"),
	}
	var note string
	testenv.Eventually(t, 60*time.Second, "a TerminationBlocked Event on the namespace", func(ctx context.Context) (bool, error) {
		if err := d.Pass(ctx); err != nil {
			return false, err
		}
		list := &eventsv1.EventList{}
		if err := k8s.List(ctx, list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Namespace" && e.Regarding.Name == ns && e.Reason == teardownv1alpha1.TerminationBlockedReason {
				note = e.Note
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("Event: %s", note)
	if !strings.Contains(note, "example.com/never") || !strings.Contains(note, "held") {
		t.Errorf("Event note = %q, want the ConfigMap held and its finalizer example.com/never", note)
	}
	if len(blockedGauge(t, "")) == 0 {
		t.Error("teardown_blocked_objects has no series with policy=\"\"")
	}

	releaseNever(held)
	testenv.Eventually(t, 60*time.Second, "the namespace to go, and its series with it", func(ctx context.Context) (bool, error) {
		if err := d.Pass(ctx); err != nil {
			return false, err
		}
		gone, err := testenv.Gone(k8s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})(ctx)
		return gone && len(blockedGauge(t, "")) == 0, err
	})
}

// TestDiagnosisOfATenantStaysInItsNamespace: a TeardownPolicy's delete step
// waits on a ConfigMap of its namespace whose finalizer was added by
// payments-operator, whose Deployment, in another tenant's namespace, is
// scaled to zero (its ServiceAccount may write ConfigMaps everywhere, as
// such an operator's does: the engine identifies the remover by who may
// write the object). The controller's engine sees that Deployment; the
// policy's author may not: its status and the Event say OutsideNamespace,
// name the ConfigMap and its finalizer (the author's to read), and neither
// the Deployment nor its namespace.
func TestDiagnosisOfATenantStaysInItsNamespace(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	payments := testenv.NewNamespace(t, k8s)
	operator := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "payments-operator", Namespace: payments},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: selector("app", "payments-operator"),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "payments-operator"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "payments-operator"}}},
			},
		},
	}
	create(t, operator)
	writer := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: payments + "-configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "update"}}}}
	create(t, writer)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: writer.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: writer.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: payments, Name: "default"}}}
	create(t, binding)
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), binding)
		_ = k8s.Delete(context.Background(), writer)
	})
	if err := testenv.WaitAllowedClient(t.Context(), k8s, testenv.Access(rbacv1.ServiceAccountKind, payments, "default",
		authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "configmaps"})); err != nil {
		t.Fatal(err)
	}
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns,
		Labels: map[string]string{"leftover": ns}, Finalizers: []string{"payments.example.com/ledger"}}}
	if err := client.WithFieldOwner(k8s, "payments-operator").Create(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releaseNever(held) })
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("guard", ns)}},
			Steps: []teardownv1alpha1.Step{{Name: "delete-leftovers", Delete: &teardownv1alpha1.DeleteAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("leftover", ns)}},
			}}},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	guarded := labelled(ns, "guarded", "guard", ns)
	create(t, guarded)
	testenv.Eventually(t, 20*time.Second, "the object guarded", hasFinalizer(guarded, ns+".teardown.dev/tenant"))
	del(t, guarded)

	diag := waitForDiagnosis(t, pol, guarded, "", "").Diagnosis
	note := waitForEvent(t, ns, guarded.Name, teardownv1alpha1.TerminationBlockedReason)
	for what, text := range map[string]string{"diagnosis.message": diag.Message, "the Event's note": note} {
		if strings.Contains(text, payments) || strings.Contains(text, "payments-operator") {
			t.Errorf("%s names another namespace's workload: %q", what, text)
		}
	}
	if diag.Cause != diagnosis.CauseOutsideNamespace || diag.Blocker == nil || diag.Blocker.Name != held.Name ||
		!strings.Contains(diag.Message, "payments.example.com/ledger") {
		t.Errorf("diagnosis = %s (blocker %v): %q, want %s about ConfigMap held and its finalizer", diag.Cause, diag.Blocker, diag.Message, diagnosis.CauseOutsideNamespace)
	}
	testenv.Eventually(t, 10*time.Second, "teardown_blocked_objects{policy="+ns+"/tenant}", func(context.Context) (bool, error) {
		return blockedGauge(t, ns+"/tenant")[diagnosis.CauseOutsideNamespace] == 1, nil
	})
	releaseNever(held)
	testenv.Eventually(t, 20*time.Second, "the guarded object to go", testenv.Gone(k8s, guarded))
}

// TestDiagnosisWithoutWhatTheStepWaitsOn covers the two causes that need
// no object the step waits on: a webhook step whose receiver is gone is
// reported with the step's error (WebhookFailing, no engine), and a webhook
// step in progress on a target that also carries another finalizer nobody
// removes is reported with that finalizer, the target as blocker.
func TestDiagnosisWithoutWhatTheStepWaitsOn(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	gone := newCleanupServer(t, func(int, steps.WebhookRequest, http.ResponseWriter) {})
	working := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookInProgress, RetryAfterSeconds: 1})
	})
	cases := []struct {
		name       string
		step       teardownv1alpha1.Step
		finalizers []string
		wantCause  string
		wantText   string
		wantTarget bool // the target is the blocker
	}{
		{name: "gone", step: gone.webhookStep("notify"), wantCause: diagnosis.CauseWebhookFailing, wantText: "step notify: transient:"},
		{name: "other", step: working.webhookStep("notify"), finalizers: []string{"example.com/never"},
			wantText: "example.com/never", wantTarget: true},
	}
	gone.Close() // connections refused from now on
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "diagnose-" + tc.name + "-" + ns
			pol := &teardownv1alpha1.ClusterTeardownPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: teardownv1alpha1.TeardownPolicySpec{
					Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("guard", tc.name)}},
					Steps:   []teardownv1alpha1.Step{tc.step},
				},
			}
			create(t, pol)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
			mustBeReady(t, pol)
			guarded := labelled(ns, tc.name, "guard", tc.name)
			guarded.Finalizers = tc.finalizers
			create(t, guarded)
			t.Cleanup(func() { releaseNever(guarded) })
			testenv.Eventually(t, 20*time.Second, "the object guarded", hasFinalizer(guarded, "teardown.dev/"+name))
			del(t, guarded)
			diag := waitForDiagnosis(t, pol, guarded, "", "").Diagnosis
			if (tc.wantCause != "" && diag.Cause != tc.wantCause) || !strings.Contains(diag.Message, tc.wantText) {
				t.Errorf("diagnosis = %s: %q, want %s mentioning %q", diag.Cause, diag.Message, tc.wantCause, tc.wantText)
			}
			if isTarget := diag.Blocker != nil && diag.Blocker.Name == guarded.Name; isTarget != tc.wantTarget {
				t.Errorf("diagnosis.blocker = %+v, want the target: %t", diag.Blocker, tc.wantTarget)
			}
		})
	}
}
