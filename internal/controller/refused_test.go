/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// maxAnnotationBytes is the API server's limit on an object's annotations,
// keys and values together.
const maxAnnotationBytes = 256 * 1024

// fillAnnotations sets annotation "fill" on cm so that its annotations are
// exactly at the API server's limit: no record fits any more.
func fillAnnotations(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil {
			return err
		}
		used := 0
		for k, v := range cm.Annotations {
			if k != "fill" {
				used += len(k) + len(v)
			}
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["fill"] = strings.Repeat("x", maxAnnotationBytes-used-len("fill"))
		return k8s.Update(t.Context(), cm)
	})
	if err != nil {
		t.Fatalf("filling the annotations of %s: %v", cm.Name, err)
	}
}

// refusedOf returns the policy's refused count and the entry naming name.
func refusedOf(ctx context.Context, pol client.Object, name string) (int32, *teardownv1alpha1.RefusedObject, error) {
	status, _, err := statusOf(ctx, pol)
	if err != nil {
		return 0, nil, err
	}
	i := slices.IndexFunc(status.RefusedObjects, func(o teardownv1alpha1.RefusedObject) bool { return o.Object.Name == name })
	if i < 0 {
		return status.Refused, nil, nil
	}
	return status.Refused, &status.RefusedObjects[i], nil
}

// metricSum adds up the series of metric (a gauge or a counter) whose
// labels include want.
func metricSum(t *testing.T, metric string, want map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(want) {
				sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestRefusedObjectsAreSaid: an object the policy selects whose annotations
// leave no room for the attached record is not guarded, and the policy's
// status counts and names it, an AttachRefused Event is on it and the
// metrics count it; a guarded object whose annotations are filled
// afterwards and which is then deleted stays, and the status and a
// ProgressRefused Event say why. A normal object beside them is guarded and
// not listed.
//
// Before this change the full object got no key and nothing said so (the
// attach patch's 422 was taken for a race and retried, then logged), and
// the held one's refused progress record was logged at the default level
// only.
func TestRefusedObjectsAreSaid(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	var finish atomic.Bool
	srv := newCleanupServer(t, func(_ int, _ steps.WebhookRequest, w http.ResponseWriter) {
		if finish.Load() {
			answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookSuccess})
			return
		}
		answerJSON(w, http.StatusOK, steps.WebhookResponse{Status: steps.WebhookInProgress, Message: "working", RetryAfterSeconds: 1})
	})
	t.Cleanup(func() { finish.Store(true) })

	// Created before the policy, so the attach-at-create webhook does not
	// see it: the controller's attach patch is what the API server refuses.
	full := labelled(ns, "full", "app", "refused")
	full.Annotations = map[string]string{"fill": strings.Repeat("x", maxAnnotationBytes-len("fill"))}
	create(t, full)
	normal := labelled(ns, "normal", "app", "refused")
	create(t, normal)
	filledLater := labelled(ns, "filled-later", "app", "refused")
	create(t, filledLater)

	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "refused")}},
			Steps:   []teardownv1alpha1.Step{srv.webhookStep("deregister")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	key := ns + ".teardown.dev/refused"
	testenv.Eventually(t, 20*time.Second, "the normal objects guarded", func(ctx context.Context) (bool, error) {
		a, err := hasFinalizer(normal, key)(ctx)
		if !a || err != nil {
			return false, err
		}
		return hasFinalizer(filledLater, key)(ctx)
	})

	// 1. The full object: not guarded, and said.
	testenv.Eventually(t, 20*time.Second, "status.refusedObjects to name the full object", func(ctx context.Context) (bool, error) {
		n, o, err := refusedOf(ctx, pol, full.Name)
		if err != nil || o == nil {
			return false, err
		}
		if n != 1 || o.Reason != teardownv1alpha1.AttachRefusedReason || !strings.Contains(o.Message, "metadata.annotations") ||
			o.Object.Kind != "ConfigMap" || o.Object.Namespace != ns {
			t.Fatalf("status.refused = %d, entry = %+v; want 1 and AttachRefused on metadata.annotations", n, o)
		}
		return true, nil
	})
	if ok, err := hasFinalizer(full, key)(t.Context()); err != nil || ok {
		t.Fatalf("the full object carries %s (%v), yet its attach was said to be refused", key, err)
	}
	if note := waitForEvent(t, ns, full.Name, finalizer.ReasonAttachRefused); !strings.Contains(note, "will not wait") {
		t.Errorf("AttachRefused Event = %q, want it to say a deletion will not wait", note)
	}
	if v := metricSum(t, "teardown_policy_refused", map[string]string{"kind": "TeardownPolicy", "policy_namespace": ns, "name": pol.Name}); v != 1 {
		t.Errorf("teardown_policy_refused = %v, want 1", v)
	}
	if v := metricSum(t, "teardown_finalizer_writes_refused_total", map[string]string{"finalizer": key, "write": finalizer.WriteAttach}); v < 1 {
		t.Errorf("teardown_finalizer_writes_refused_total = %v, want at least 1", v)
	}

	// 2. A guarded object filled afterwards, then deleted: held, and said.
	fillAnnotations(t, filledLater)
	del(t, filledLater)
	testenv.Eventually(t, 30*time.Second, "status.refusedObjects to name the held object", func(ctx context.Context) (bool, error) {
		n, o, err := refusedOf(ctx, pol, filledLater.Name)
		if err != nil || o == nil {
			return false, err
		}
		if n != 2 || o.Reason != teardownv1alpha1.ProgressRefusedReason {
			t.Fatalf("status.refused = %d, entry = %+v; want 2 and ProgressRefused", n, o)
		}
		return true, nil
	})
	waitForEvent(t, ns, filledLater.Name, finalizer.ReasonProgressRefused)
	if ok, err := hasFinalizer(filledLater, key)(t.Context()); err != nil || !ok {
		t.Fatalf("the held object lost %s (%v) while its cleanup had not finished", key, err)
	}

	// Negative control: the normal object is guarded and never listed.
	if _, o, err := refusedOf(t.Context(), pol, normal.Name); err != nil || o != nil {
		t.Errorf("the normal object is listed as refused: %+v (%v)", o, err)
	}

	// Once its cleanup is done, the held object goes, and leaves the list.
	finish.Store(true)
	testenv.Eventually(t, 30*time.Second, "the held object to go", testenv.Gone(k8s, filledLater))
	testenv.Eventually(t, 20*time.Second, "the held object to leave status.refusedObjects", func(ctx context.Context) (bool, error) {
		n, o, err := refusedOf(ctx, pol, filledLater.Name)
		return err == nil && o == nil && n == 1, err
	})
}
