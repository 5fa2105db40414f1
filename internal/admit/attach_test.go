/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admit

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// TestAttachReadsOnlyWhatCanGuardTheObject: a CREATE lists the
// TeardownPolicies of the object's own namespace (none for a cluster-scoped
// object) and the cluster's, not every policy of the cluster; it attaches
// the keys of the ready ones that select it.
func TestAttachReadsOnlyWhatCanGuardTheObject(t *testing.T) {
	ready := func(gen int64) teardownv1alpha1.TeardownPolicyStatus {
		return teardownv1alpha1.TeardownPolicyStatus{Conditions: []metav1.Condition{{
			Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: gen,
		}}}
	}
	spec := func(key string) teardownv1alpha1.TeardownPolicySpec {
		return teardownv1alpha1.TeardownPolicySpec{Finalizer: key, Attach: teardownv1alpha1.AttachAutomatic,
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap"}}}
	}
	var objs []client.Object
	for _, p := range []struct{ ns, key string }{{ns, "shop.teardown.dev/own"}, {"other", "other.teardown.dev/theirs"}} {
		objs = append(objs, &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: p.ns, UID: k8stypes.UID("uid-" + p.ns), Generation: 1},
			Spec:       spec(p.key), Status: ready(1),
		})
	}
	objs = append(objs, &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "all", UID: "uid-cluster", Generation: 1},
		Spec:       spec("teardown.dev/all"), Status: ready(1),
	}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	var listed []string
	c := fake.NewClientBuilder().WithScheme(inUseScheme(t)).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			o := (&client.ListOptions{}).ApplyOptions(opts)
			if _, ok := list.(*teardownv1alpha1.TeardownPolicyList); ok {
				listed = append(listed, "namespace "+o.Namespace)
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	a := &Attacher{Client: c}
	create := func(namespace string) []string {
		t.Helper()
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: namespace}}
		raw, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		resp := a.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: namespace, Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed {
			t.Fatalf("CREATE in %q refused: %v", namespace, resp.Result)
		}
		var keys []string
		for _, p := range resp.Patches {
			if k, ok := p.Value.(string); ok && p.Path == "/metadata/finalizers/-" || p.Path == "/metadata/finalizers/0" {
				keys = append(keys, k)
			}
			if l, ok := p.Value.([]any); ok && p.Path == "/metadata/finalizers" {
				for _, k := range l {
					keys = append(keys, k.(string))
				}
			}
		}
		slices.Sort(keys)
		return keys
	}
	if diff := cmp.Diff([]string{"shop.teardown.dev/own", "teardown.dev/all"}, create(ns)); diff != "" {
		t.Errorf("keys attached at CREATE in %s (-want +got):\n%s", ns, diff)
	}
	if diff := cmp.Diff([]string{"namespace " + ns}, listed); diff != "" {
		t.Errorf("TeardownPolicy lists (-want +got):\n%s", diff)
	}
}
