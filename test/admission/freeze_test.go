/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestDeletedPolicySpecIsFrozen (issue 16, family 3): once a policy is
// being deleted, nobody may change its spec (an administrator included), so
// the teardowns it started finish as it was validated; its metadata (the
// finalizers the controller removes) still changes. A live policy's spec
// can be edited (negative control).
func TestDeletedPolicySpecIsFrozen(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	const hold = "example.com/hold"
	newPolicy := func(name string) *teardownv1alpha1.TeardownPolicy {
		pol := &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: []string{hold}},
			Spec: teardownv1alpha1.TeardownPolicySpec{
				Finalizer: "example.com/frozen",
				Targets:   []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{}}},
			},
		}
		if err := c.Create(t.Context(), pol); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Patch(context.Background(), pol, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		})
		return pol
	}
	editSpec := func(pol *teardownv1alpha1.TeardownPolicy) error {
		return c.Patch(t.Context(), pol, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"finalizer":"platform.example.com/protect"}}`)))
	}

	live := newPolicy("live")
	if err := editSpec(live); err != nil {
		t.Errorf("editing a live policy's spec: %v", err)
	}

	deleted := newPolicy("deleted")
	if err := c.Delete(t.Context(), deleted); err != nil {
		t.Fatal(err)
	}
	const refusal = "its spec is frozen"
	var last error
	// The admission policy may take a moment to reach the plugin.
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = editSpec(deleted)
		return last != nil && strings.Contains(last.Error(), refusal), nil
	}); err != nil {
		t.Fatalf("editing a deleted policy's spec: %v, want refused (%q)", last, refusal)
	}
	if err := c.Patch(t.Context(), deleted, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"web"}}}`))); err != nil {
		t.Errorf("changing a deleted policy's labels: %v", err)
	}
	if err := c.Patch(t.Context(), deleted, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Errorf("removing a deleted policy's finalizers: %v", err)
	}
}
