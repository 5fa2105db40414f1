/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/teardown-dev/teardown/internal/diagnose/kube/kubefake"
)

// This file is the engine's test harness: the engine over client-go's fakes
// (kubefake), so that a family's table test runs in the unit tier, with no
// control plane.

// testNow is the clock of every fake scenario: deletions and Events are
// dated from it.
var testNow = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// fakeExplainer is an Explainer, judging ages against now, over a fake
// cluster holding objs; the fakes are returned for reactors.
func fakeExplainer(t testing.TB, now time.Time, objs ...runtime.Object) (*Explainer, *kubefake.Fakes) {
	t.Helper()
	c, f := kubefake.New(t, objs...)
	return NewExplainer(c, now), f
}

// explainFake explains target, one of objs, in a fake cluster holding objs,
// at now.
func explainFake(t testing.TB, now time.Time, target runtime.Object, objs ...runtime.Object) *Report {
	t.Helper()
	e, f := fakeExplainer(t, now, objs...)
	rep, err := e.Explain(context.Background(), fakeTarget(t, f.Mapper, target))
	if err != nil {
		t.Fatalf("Explain: %v", err)
	}
	return rep
}

// fakeTarget names obj as Explain takes it.
func fakeTarget(t testing.TB, mapper meta.RESTMapper, obj runtime.Object) Target {
	t.Helper()
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatalf("the kind of %T: %v", obj, err)
		}
		gvk = gvks[0]
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("mapping %s: %v", gvk, err)
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return Target{GVR: m.Resource, GVK: gvk, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace, Namespace: acc.GetNamespace(), Name: acc.GetName()}
}

// rootCauses is the causes of rep's root blockers, in order.
func rootCauses(rep *Report) []string {
	var out []string
	for _, f := range rep.RootBlockers {
		out = append(out, f.Cause)
	}
	return out
}
