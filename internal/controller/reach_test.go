/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// widgetFinalizer stands for an operator's finalizer on its custom
// resources (ConfigMaps here).
const widgetFinalizer = "widgets.example.com/cleanup"

// reachScene is an operator's namespace ops holding the guarded object
// ("operator"), and three application namespaces, a and b labelled
// team=<ops>, each with a widget carrying widgetFinalizer.
type reachScene struct {
	ops      string
	apps     []string // a, b, c
	operator *corev1.ConfigMap
	widgets  map[string]*corev1.ConfigMap // by namespace
	app      string                       // the widgets' app label
}

func newReachScene(t *testing.T) *reachScene {
	t.Helper()
	s := &reachScene{ops: testenv.NewNamespace(t, k8s), widgets: map[string]*corev1.ConfigMap{}}
	s.app = "widget-" + s.ops
	for i := range 3 {
		ns := testenv.NewNamespace(t, k8s)
		s.apps = append(s.apps, ns)
		if i < 2 {
			labelNamespace(t, ns, "team", s.ops)
		}
		w := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "widget", Namespace: ns, Labels: map[string]string{"app": s.app}, Finalizers: []string{widgetFinalizer}}}
		create(t, w)
		s.widgets[ns] = w
		t.Cleanup(func() { finalizeWidget(t, w) })
	}
	s.operator = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: s.ops, Labels: map[string]string{"app": "operator-" + s.ops}}}
	create(t, s.operator)
	return s
}

func labelNamespace(t *testing.T, ns, key, value string) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+key+`":"`+value+`"}}}`))
	if err := k8s.Patch(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch); err != nil {
		t.Fatal(err)
	}
}

// finalizeWidget is the operator's cleanup: it removes its finalizer.
func finalizeWidget(t *testing.T, w *corev1.ConfigMap) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
	if err := k8s.Patch(context.Background(), w.DeepCopy(), patch); client.IgnoreNotFound(err) != nil {
		t.Errorf("finalizing widget %s/%s: %v", w.Namespace, w.Name, err)
	}
}

// policy is the operator-last ClusterTeardownPolicy of the scene: it guards
// the operator and runs steps.
func (s *reachScene) policy(steps ...teardownv1alpha1.Step) *teardownv1alpha1.ClusterTeardownPolicy {
	return &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "reach-" + s.ops},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "operator-"+s.ops),
				NamespaceSelector: selector("kubernetes.io/metadata.name", s.ops)}},
			Steps: steps,
		},
	}
}

func (s *reachScene) widgetsIn(namespaces *metav1.LabelSelector) []teardownv1alpha1.ResourceSelector {
	return []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", s.app), NamespaceSelector: namespaces}}
}

// progress is the operator's progress message under key.
func (s *reachScene) progress(ctx context.Context, key string) (string, error) {
	var got corev1.ConfigMap
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(s.operator), &got); err != nil {
		return "", err
	}
	return got.Annotations[finalizer.ProgressAnnotation(key)], nil
}

// noOtherNamespaceNamed fails if what a reader of the operator's namespace
// reads about it (its annotations, the Events regarding it) names an
// application namespace: the audience rule (docs/security.md).
func (s *reachScene) noOtherNamespaceNamed(t *testing.T) {
	t.Helper()
	var got corev1.ConfigMap
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(s.operator), &got); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for k, v := range got.Annotations {
		texts["annotation "+k] = v
	}
	events := &eventsv1.EventList{}
	if err := k8s.List(t.Context(), events, client.InNamespace(s.ops)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		texts["Event "+e.Reason+" "+e.Name] = e.Note
	}
	for where, text := range texts {
		for _, ns := range s.apps {
			if strings.Contains(text, ns) {
				t.Errorf("%s on the operator in %s names namespace %s: %q", where, s.ops, ns, text)
			}
		}
	}
}

// TestClusterPolicyStepsReachNamespaces: a ClusterTeardownPolicy guarding an
// object of namespace ops deletes, with a delete step's namespaceSelector
// (team=ops), the widgets of a and b and not c's; its wait step with
// namespaceSelector: {} then holds the object while c's widget exists. What
// it writes on the object names none of a, b, c. Before namespaceSelector
// both steps looked only in ops: nothing was deleted and the object went at
// once.
func TestClusterPolicyStepsReachNamespaces(t *testing.T) {
	testenv.SkipShort(t)
	s := newReachScene(t)
	pol := s.policy(
		teardownv1alpha1.Step{Name: "delete-widgets", Delete: &teardownv1alpha1.DeleteAction{Resources: s.widgetsIn(selector("team", s.ops))}},
		teardownv1alpha1.Step{Name: "widgets-gone", Wait: &teardownv1alpha1.WaitAction{Resources: s.widgetsIn(&metav1.LabelSelector{})}},
	)
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	mustBeReady(t, pol)
	key := "teardown.dev/" + pol.Name
	testenv.Eventually(t, 20*time.Second, "the finalizer on the operator", hasFinalizer(s.operator, key))

	del(t, s.operator)
	a, b, c := s.apps[0], s.apps[1], s.apps[2]
	testenv.Eventually(t, 20*time.Second, "the widgets of a and b being deleted", func(ctx context.Context) (bool, error) {
		for _, ns := range []string{a, b} {
			var w corev1.ConfigMap
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(s.widgets[ns]), &w); err != nil || w.DeletionTimestamp == nil {
				return false, err
			}
		}
		return true, nil
	})
	testenv.Eventually(t, 20*time.Second, "the delete step to count what it waits for", func(ctx context.Context) (bool, error) {
		p, err := s.progress(ctx, key)
		return strings.Contains(p, "waiting for 2 object(s) to be gone: 2 objects outside namespace "+s.ops), err
	})
	var w corev1.ConfigMap
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(s.widgets[c]), &w); err != nil || w.DeletionTimestamp != nil {
		t.Fatalf("the widget of c (no team label) was deleted, or is unreadable (%v)", err)
	}

	// The operator finalizes a's and b's widgets; c's still exists.
	finalizeWidget(t, s.widgets[a])
	finalizeWidget(t, s.widgets[b])
	// The progress is rewritten at most every 10 s, and the step checked
	// again at the waits' safety net (30 s) when nothing it watches changes.
	testenv.Eventually(t, 60*time.Second, "the wait step to hold for c's widget", func(ctx context.Context) (bool, error) {
		p, err := s.progress(ctx, key)
		return strings.Contains(p, "step widgets-gone: waiting until size(objects) == 0 (1 object(s) selected: 1 object outside namespace "+s.ops+"; 1 not being deleted)"), err
	})
	if ok, err := hasFinalizer(s.operator, key)(t.Context()); err != nil || !ok {
		t.Fatalf("the operator lost its finalizer while c's widget exists (%v)", err)
	}
	s.noOtherNamespaceNamed(t)

	finalizeWidget(t, s.widgets[c])
	del(t, s.widgets[c])
	testenv.Eventually(t, 40*time.Second, "the operator to be gone", testenv.Gone(k8s, s.operator))
}
