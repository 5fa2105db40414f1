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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestWaitConditionKubernetesCEL: a wait step's condition uses the
// Kubernetes CEL libraries (quantity, url, cidr) on ConfigMaps' data. While
// a volume's size is over 1Gi the step waits (the target stays, its progress
// says so); once the size is edited below, the condition holds and the
// target goes. A condition over the estimated cost bound (a loop over
// objects inside another) makes its policy Ready=False, InvalidCondition.
func TestWaitConditionKubernetesCEL(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	const condition = "objects.all(o, quantity(o.data.size).isLessThan(quantity('1Gi')) && " +
		"url(o.data.endpoint).getScheme() == 'https' && cidr('10.0.0.0/8').containsIP(ip(o.data.address)))"
	volume := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "volume", Namespace: ns, Labels: map[string]string{"app": "cel-volume"}},
		Data:       map[string]string{"size": "2Gi", "endpoint": "https://storage.example.com/v1", "address": "10.1.2.3"},
	}
	create(t, volume)
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "cel-" + ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "cel-target"),
				NamespaceSelector: selector("kubernetes.io/metadata.name", ns)}},
			Steps: []teardownv1alpha1.Step{{Name: "volumes-small", Wait: &teardownv1alpha1.WaitAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "cel-volume")}},
				Condition: condition,
			}}},
		},
	}
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	mustBeReady(t, pol)

	target := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: ns, Labels: map[string]string{"app": "cel-target"}}}
	create(t, target)
	key := "teardown.dev/" + pol.Name
	testenv.Eventually(t, 20*time.Second, "the finalizer on the target", hasFinalizer(target, key))
	del(t, target)
	testenv.Eventually(t, 20*time.Second, "the wait step to report that it waits", func(ctx context.Context) (bool, error) {
		var got corev1.ConfigMap
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(target), &got); err != nil {
			return false, err
		}
		return strings.Contains(got.Annotations[finalizer.ProgressAnnotation(key)], "waiting until"), nil
	})
	if ok, err := hasFinalizer(target, key)(t.Context()); err != nil || !ok {
		t.Fatalf("the target lost its finalizer while the volume is 2Gi (%v)", err)
	}

	volume.Data["size"] = "512Mi"
	if err := k8s.Update(t.Context(), volume); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 40*time.Second, "the target to be gone", testenv.Gone(k8s, target))

	costly := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "cel-costly-" + ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "cel-costly"),
				NamespaceSelector: selector("kubernetes.io/metadata.name", ns)}},
			Steps: []teardownv1alpha1.Step{{Name: "pairs", Wait: &teardownv1alpha1.WaitAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", "cel-volume")}},
				Condition: "objects.all(a, objects.exists(b, a.metadata.name == b.metadata.name))",
			}}},
		},
	}
	create(t, costly)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), costly) })
	c := ready(t, costly)
	if c.Status != metav1.ConditionFalse || c.Reason != teardownv1alpha1.InvalidConditionReason || !strings.Contains(c.Message, "is too costly: its estimated cost is up to") {
		t.Errorf("Ready = %s %s %q, want False %s saying the condition is too costly", c.Status, c.Reason, c.Message, teardownv1alpha1.InvalidConditionReason)
	}
}
