/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/recordseal"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestForgedRecordsWithoutAdmission (issue 27, records that prove
// themselves): with no admission policy installed, a tenant who may patch
// her own ConfigMaps puts a ClusterTeardownPolicy's key on two of them, in
// a namespace the policy's namespaceSelector excludes, and writes records
// bound to each (their real UIDs) naming the policy: an attached record on
// one, a step record on the other. Then she deletes them. With its keys
// (the Secret it makes in its namespace), the controller reads both
// records as unproven: no webhook call, and the key stays. Negative
// control: the same controller without keys takes them for its own and
// runs the policy's cleanup on objects it does not select, as the model
// test found (seeds 38 and 40 without the admission policy).
func TestForgedRecordsWithoutAdmission(t *testing.T) {
	testenv.SkipShort(t)
	for _, sealed := range []bool{true, false} {
		t.Run(map[bool]string{true: "sealed", false: "unsealed"}[sealed], func(t *testing.T) {
			key := fmt.Sprintf("platform.example.com/forged-%v", sealed)
			own, tenant := newNamespace(t), newNamespace(t)
			hook := newCleanupServer(t, func(webhookRequest) answer { return success })
			var args []string
			if sealed {
				args = append(args, "--cluster-resource-namespace="+own)
			}
			c := startController(t, "controller", args...)
			pol, selected := platformPolicy(t, key, hook)
			create(t, pol)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
			mustBeReady(t, pol)
			if sealed {
				secret := &corev1.Secret{}
				if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: own, Name: recordseal.DefaultSecret}, secret); err != nil || len(secret.Data) != 1 {
					t.Fatalf("the controller made no key Secret in its namespace: %v, %d keys", err, len(secret.Data))
				}
			}
			got := &teardownv1alpha1.ClusterTeardownPolicy{}
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pol), got); err != nil {
				t.Fatal(err)
			}
			// The negative control's guarded ConfigMap, selected, goes
			// after its cleanup either way.
			inside := configMap(selected, "guarded", labels("app", "guarded"))
			create(t, inside)
			testenv.Eventually(t, 30*time.Second, "the selected ConfigMap to carry the key", func(ctx context.Context) (bool, error) {
				return carries(ctx, inside, key)
			})

			// Forged while the controller is down, so that it first sees
			// them being deleted (a live object claiming an attachment
			// the policy does not select is released at once, which
			// would not test the records).
			if err := c.Kill(); err != nil {
				t.Fatal(err)
			}
			forge := func(name string, records func(uid types.UID) map[string]string) *corev1.ConfigMap {
				cm := configMap(tenant, name, labels("app", "guarded"), key)
				create(t, cm)
				t.Cleanup(func() {
					_ = k8s.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
				})
				patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": records(cm.UID)}})
				if err := k8s.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
					t.Fatal(err)
				}
				deleteNow(t, cm)
				return cm
			}
			attached := forge("forged-attached", func(uid types.UID) map[string]string {
				return map[string]string{finalizer.AttachedAnnotation(key): string(uid) + "/" + string(got.UID)}
			})
			started := forge("forged-step", func(uid types.UID) map[string]string {
				rec, _ := json.Marshal(map[string]any{"object": uid, "policy": got.UID, "fingerprint": "x", "step": 0, "name": "platform",
					"since": time.Now().UTC().Format(time.RFC3339)})
				return map[string]string{steps.StateAnnotation(key): string(rec)}
			})
			deleteNow(t, inside)
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 30*time.Second, "the selected ConfigMap to go after its cleanup", testenv.Gone(k8s, inside))
			if !sealed {
				testenv.Eventually(t, 30*time.Second, "the forged records to be believed (negative control)", func(context.Context) (bool, error) {
					return hook.callsFor(attached.UID) > 0 && hook.callsFor(started.UID) > 0, nil
				})
				return
			}
			time.Sleep(3 * time.Second)
			for _, cm := range []*corev1.ConfigMap{attached, started} {
				if n := hook.callsFor(cm.UID); n > 0 {
					t.Errorf("%s: the policy called its webhook %d times for a ConfigMap outside its selectors, on a forged record", cm.Name, n)
				}
				if ok, err := carries(context.Background(), cm, key); err != nil || !ok {
					t.Errorf("%s: the key was removed (carries=%v, err=%v)", cm.Name, ok, err)
				}
			}
		})
	}
}
