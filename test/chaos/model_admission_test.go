/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// installProtectRecords installs the shipped teardown-protect-records
// admission policy (config/admission) for the model run, as config/default
// and the chart do, unless TEARDOWN_MODEL_ADMISSION=none. With it, a record
// the generator writes at UPDATE is refused, as in a cluster installed as
// shipped. A tenant who may patch an object can otherwise write records
// bound to its UID, which the controller's seals tell from its own
// (docs/security.md, "Records prove themselves"): TEARDOWN_MODEL_ADMISSION=none
// runs the model on the seals alone. Records written at CREATE, unbound by
// construction, still reach the controller, whose own defences the run
// checks; so do every other write the generator makes (the other shipped
// admission policies, which would refuse some of them, are not installed).
func installProtectRecords(t *testing.T, ctx context.Context) {
	t.Helper()
	if os.Getenv("TEARDOWN_MODEL_ADMISSION") == "none" {
		t.Log("TEARDOWN_MODEL_ADMISSION=none: teardown-protect-records is not installed")
		return
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "admission", "protect_records.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj client.Object
		switch {
		case strings.Contains(doc, "kind: ValidatingAdmissionPolicyBinding"):
			obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		case strings.Contains(doc, "kind: ValidatingAdmissionPolicy"):
			obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		default:
			continue
		}
		if err := yaml.Unmarshal([]byte(doc), obj); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
	}
	// In force once a record written at UPDATE is refused.
	ns := newNamespace(t)
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "protect-records-probe"}}
	if err := k8s.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"annotations":{"progress.finalizer.teardown.dev/probe":"{}"}}}`)
	testenv.Eventually(t, 30*time.Second, "teardown-protect-records to refuse a record written at UPDATE", func(ctx context.Context) (bool, error) {
		err := k8s.Patch(ctx, probe, client.RawPatch(types.MergePatchType, patch))
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			return true, nil
		case err != nil:
			return false, fmt.Errorf("probing: %w", err)
		}
		// Not in force yet: take the record away again, which the policy
		// refuses too once it is.
		err = k8s.Patch(ctx, probe, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"progress.finalizer.teardown.dev/probe":null}}}`)))
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return true, nil
		}
		return false, err
	})
}
