/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestRecordsAreTheControllers: the controller's records on an object (its
// progress, the step it reached, that it attached a key) cannot be forged,
// changed or removed by a user who may edit the object; other annotations
// of that object can; the controller can write them.
func TestRecordsAreTheControllers(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	userCfg, _ := userConfig(t, "records-editor", ns)
	user := clientFor(t, userCfg)
	const key = "my.custom/finalizer"
	progress, state, attached := finalizer.ProgressAnnotation(key), steps.StateAnnotation(key), finalizer.AttachedAnnotation(key)
	cm := configMap(t, ns, "recorded", []string{key}, map[string]string{attached: "true", progress: `{"finalizer":"my.custom/finalizer","state":"Pending"}`})
	merge := func(annotations string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"annotations":%s}}`, annotations)
	}
	const refusal = "only the controller writes it"
	// The policy may take a moment to reach the admission plugin.
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = user.CoreV1().ConfigMaps(ns).Patch(ctx, cm.Name, types.MergePatchType,
			merge(fmt.Sprintf(`{%q:%q}`, state, `{"step":99}`)), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), refusal), nil
	})
	if err != nil {
		t.Fatalf("forging a step record: %v, want refused", last)
	}
	cases := []struct {
		name    string
		patch   []byte
		refused bool
	}{
		{"forge a step record", merge(fmt.Sprintf(`{%q:%q}`, state, `{"step":99}`)), true},
		{"rewrite the progress record", merge(fmt.Sprintf(`{%q:%q}`, progress, `{"state":"Done"}`)), true},
		{"remove the attached record", merge(fmt.Sprintf(`{%q:null}`, attached)), true},
		{"claim another key was attached", merge(fmt.Sprintf(`{%q:"true"}`, finalizer.AttachedAnnotation("example.com/theirs"))), true},
		// The deployment controller copies a Deployment's annotations to
		// its ReplicaSets: a record bound to another object is inert.
		{"copy another object's attached record", merge(fmt.Sprintf(`{%q:%q}`, finalizer.AttachedAnnotation("example.com/copied"),
			"0b5e2b4e-1111-4c8e-9d3a-5f0c8a7e2d10/7d4c9f6a-2222-4b1e-8e5d-3a9b0c1d2e3f")), false},
		{"attach a record bound to this object", merge(fmt.Sprintf(`{%q:%q}`, finalizer.AttachedAnnotation("example.com/mine"),
			string(cm.UID)+"/7d4c9f6a-2222-4b1e-8e5d-3a9b0c1d2e3f")), true},
		{"change an unrelated annotation", merge(`{"owner":"team-a"}`), false},
		{"change labels", []byte(`{"metadata":{"labels":{"tier":"web"}}}`), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := user.CoreV1().ConfigMaps(ns).Patch(t.Context(), cm.Name, types.MergePatchType, tc.patch, metav1.PatchOptions{})
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), refusal)):
				t.Errorf("patch: %v, want refused", err)
			case !tc.refused && err != nil:
				t.Errorf("patch refused: %v", err)
			}
		})
	}
	// The controller writes its records.
	if _, err := controllerClient(t).CoreV1().ConfigMaps(ns).Patch(t.Context(), cm.Name, types.MergePatchType,
		merge(fmt.Sprintf(`{%q:%q}`, progress, `{"state":"Retry"}`)), metav1.PatchOptions{}); err != nil {
		t.Errorf("the controller could not write its record: %v", err)
	}
}
