/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// TestEveryStepFieldIsAKind holds the registry to the API: each action
// field of a Step (a pointer to an ...Action type) is one kind, named as
// its JSON field, with a run and a needs. A new action field without an
// entry in kinds fails here, not in a cluster.
func TestEveryStepFieldIsAKind(t *testing.T) {
	st := reflect.TypeFor[teardownv1alpha1.Step]()
	var fields, registered []Action
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Type.Kind() != reflect.Pointer || !strings.HasSuffix(f.Type.Elem().Name(), "Action") {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields = append(fields, Action(name))
		step := teardownv1alpha1.Step{}
		reflect.ValueOf(&step).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		k := kindOf(step)
		if k == nil {
			t.Errorf("Step.%s has no kind in the registry", f.Name)
			continue
		}
		if k.action != Action(name) || ActionOf(step) != Action(name) {
			t.Errorf("Step.%s is registered as %q, want %q (its JSON name)", f.Name, k.action, name)
		}
		if k.run == nil || k.needs == nil {
			t.Errorf("kind %s lacks a run or a needs", k.action)
		}
	}
	for _, k := range kinds {
		registered = append(registered, k.action)
	}
	if diff := cmp.Diff(fields, registered); diff != "" {
		t.Errorf("registered kinds differ from the API's action fields (-api +registry):\n%s", diff)
	}
	if got := ActionOf(teardownv1alpha1.Step{Name: "empty"}); got != "" {
		t.Errorf("a step with no action is %q", got)
	}
}
