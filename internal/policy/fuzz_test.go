/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/common/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// fuzzObjects turns fuzz bytes into a wait condition's objects as the
// runner passes them: a list of maps decoded the way unstructured objects
// are (whole numbers as int64). Bytes that are not a JSON list of objects
// still give objects, so every input reaches evaluation.
func fuzzObjects(data []byte) []any {
	var decoded any
	if err := utiljson.Unmarshal(data, &decoded); err != nil {
		return []any{map[string]any{"metadata": map[string]any{"name": string(data)}}}
	}
	list, ok := decoded.([]any)
	if !ok {
		list = []any{decoded}
	}
	objects := make([]any, 0, len(list))
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			objects = append(objects, m)
		} else {
			objects = append(objects, map[string]any{"value": item})
		}
	}
	return objects
}

// FuzzCompileCondition compiles any expression without panicking, and
// evaluates one that compiles against objects built from fuzz bytes within
// its cost limit, without a panic (which CEL would report as an "internal
// error") and without running on past the limit.
func FuzzCompileCondition(f *testing.F) {
	objects := `[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"app":"x"}},"data":{"k":"v"}},` +
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"status":{"phase":"Running","containerStatuses":[{"ready":true,"restartCount":3}]}}]`
	for _, seed := range []struct{ expr, objects string }{
		{"size(objects) == 0", "[]"},
		{"size(objects) == 0", objects},
		{"objects.all(o, o.status.phase == 'Succeeded')", objects},
		{"objects.exists(o, has(o.metadata.labels) && o.metadata.labels.app == 'x')", objects},
		{"objects.all(o, o.status.containerStatuses.all(c, c.ready && c.restartCount < 5))", objects},
		{"objects[0]", objects},
		{"objects.map(o, objects.map(p, objects.map(q, o == p && p == q))).size() > 0", objects},
		{"[1, 2, 3].map(x, [1, 2, 3].map(y, [1, 2, 3].map(z, x * y * z))).size() == 3", "{}"},
		{"objects.all(o, o.metadata.name.matches('^(a+)+$'))", `[{"metadata":{"name":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"}}]`},
		{"1 / 0 == 0", "null"},
		{"9223372036854775807 + 1 > 0", "1"},
		{"'x' + 1", "[1, 2.5, true, null, \"s\"]"},
		{strings.Repeat("(", 300) + "true" + strings.Repeat(")", 300), ""},
		{"objects.all(o, o.x == " + strings.Repeat("[", 50) + strings.Repeat("]", 50) + ")", "[{\"x\":[[[]]]}]"},
		{"", "\xff"},
	} {
		f.Add(seed.expr, []byte(seed.objects))
	}
	f.Fuzz(func(t *testing.T, expr string, data []byte) {
		prg, err := CompileCondition(expr)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		val, details, err := prg.ContextEval(ctx, map[string]any{"objects": fuzzObjects(data)})
		if ctx.Err() != nil {
			t.Fatalf("condition %q ran for %v, past its cost limit", expr, time.Since(start))
		}
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("condition %q panicked: %v", expr, err)
			}
			return
		}
		if val == nil {
			t.Fatalf("condition %q returned no value and no error", expr)
		}
		if types.IsError(val) {
			t.Fatalf("condition %q returned the error %v without an error", expr, val)
		}
		if cost := details.ActualCost(); cost == nil || *cost > maxConditionCost {
			t.Fatalf("condition %q evaluated at a cost of %v, over %d", expr, cost, maxConditionCost)
		}
	})
}

// specField matches one step of a field path: a JSON name, maybe indexed.
var specField = regexp.MustCompile(`^([A-Za-z]+)(?:\[(\d+)\])?$`)

// resolveSpecField reports whether path (spec.targets[0].selector) names a
// field of spec, with every index in range.
func resolveSpecField(spec *teardownv1alpha1.TeardownPolicySpec, path string) bool {
	rest, ok := strings.CutPrefix(path, "spec.")
	if !ok {
		return false
	}
	v := reflect.ValueOf(spec).Elem()
	for seg := range strings.SplitSeq(rest, ".") {
		m := specField.FindStringSubmatch(seg)
		if m == nil {
			return false
		}
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = reflect.Zero(v.Type().Elem())
				continue
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return false
		}
		field, found := reflect.Value{}, false
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			if name == m[1] {
				field, found = v.Field(i), true
				break
			}
		}
		if !found {
			return false
		}
		v = field
		if m[2] != "" {
			i, err := strconv.Atoi(m[2])
			if err != nil || v.Kind() != reflect.Slice || i >= v.Len() {
				return false
			}
			v = v.Index(i)
		}
	}
	return true
}

// FuzzFromObject parses policies whose specs come from fuzz bytes, with a
// fuzzed wait condition, target apiVersion and selector requirement added:
// no panic; an error is a *FieldError whose Field names a field of the spec
// and whose Reason is set; a policy that parses has a key, and as many steps
// and targets as its spec, and the same fingerprint when parsed again.
func FuzzFromObject(f *testing.F) {
	f.Add([]byte(`{"targets":[{"apiVersion":"v1","kind":"ConfigMap","selector":{"matchLabels":{"app":"x"}}}]}`), "size(objects) == 0", "v1", "app", "In")
	f.Add([]byte(`{"finalizer":"a.io/x","steps":[{"name":"wait","wait":{"resources":[{"apiVersion":"v1","kind":"Pod","selector":{}}],"condition":"objects.all(o, o.status.phase == 'Succeeded')"}}],"targets":[]}`), "", "apps/v1", "tier", "Exists")
	f.Add([]byte(`{"targets":[{"apiVersion":"a/b/c","kind":"X","selector":{"matchExpressions":[{"key":"k","operator":"Bogus"}]}}]}`), "objects", "/v1", "", "NotIn")
	f.Add([]byte(`{"targets":[{"apiVersion":"v1","kind":"Pod","selector":null,"namespaceSelector":{"matchLabels":{"bad key!":"v"}}}],"deadline":"1h","onDeadline":"Release"}`), "1 +", "v1", "k", "DoesNotExist")
	f.Add([]byte(`{"steps":[{"name":"a"},{"name":"b","wait":{"resources":[],"condition":""}},{"name":"c","delete":{"resources":[]}}]}`), "'x'", "", strings.Repeat("k", 64), "Gt")
	f.Add([]byte(`not json`), "true", "v1", "example.com/k", "In")
	f.Fuzz(func(t *testing.T, specJSON []byte, condition, apiVersion, labelKey, operator string) {
		var spec teardownv1alpha1.TeardownPolicySpec
		if json.Unmarshal(specJSON, &spec) != nil {
			spec = teardownv1alpha1.TeardownPolicySpec{}
		}
		spec.Steps = append(spec.Steps, teardownv1alpha1.Step{Name: "fuzzed", Wait: &teardownv1alpha1.WaitAction{Condition: condition}})
		spec.Targets = append(spec.Targets, teardownv1alpha1.Target{APIVersion: apiVersion, Kind: "ConfigMap",
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: labelKey, Operator: metav1.LabelSelectorOperator(operator), Values: []string{labelKey}},
			}}})
		namespaced := &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: *spec.DeepCopy()}
		cluster := &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: *spec.DeepCopy()}
		for _, tc := range []struct {
			obj  client.Object
			spec *teardownv1alpha1.TeardownPolicySpec
		}{{namespaced, &namespaced.Spec}, {cluster, &cluster.Spec}} {
			pol, err := FromObject(tc.obj)
			if err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("FromObject returned %T %v, not a *FieldError", err, err)
				}
				if fe.Reason == "" || fe.Err == nil {
					t.Errorf("FromObject returned a FieldError without a reason or a cause: %+v", fe)
				}
				if !resolveSpecField(tc.spec, fe.Field) {
					t.Errorf("FromObject blames %q, which is not a field of the spec: %v", fe.Field, err)
				}
				continue
			}
			if pol.Key == "" {
				t.Errorf("FromObject returned a policy without a key: %+v", pol)
			}
			if len(pol.Steps) != len(tc.spec.Steps) || len(pol.Targets) != len(tc.spec.Targets) {
				t.Errorf("FromObject returned %d steps and %d targets from a spec with %d and %d",
					len(pol.Steps), len(pol.Targets), len(tc.spec.Steps), len(tc.spec.Targets))
			}
			if again := Fingerprint(tc.spec.Steps); again != pol.Fingerprint {
				t.Errorf("the steps' fingerprint was %q, then %q", pol.Fingerprint, again)
			}
		}
	})
}
