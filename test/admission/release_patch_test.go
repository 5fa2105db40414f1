/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admission

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestExplainDryRunsTheReleasePatch: explain's dry-run of a removal is the
// patch release applies (record.RemovalPatch), so for a key Teardown
// attached it carries the release record the policies let through, and
// reports the removal allowed; release then applies it as a user, keeping
// the attached record only the controller may change.
func TestExplainDryRunsTheReleasePatch(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	_, kubeconfig := userConfig(t, "dave", ns)
	key := "example.com/bucket"
	cm := configMap(t, ns, "attached", []string{key}, map[string]string{finalizer.AttachedAnnotation(key): "true"})
	if err := admin.CoreV1().ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		root := plugin.NewRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
		root.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir()}, args...))
		root.SetContext(t.Context())
		err := root.Execute()
		return out.String(), errOut.String(), err
	}
	out, _, _ := run("explain", "configmap/attached", "-n", ns, "-o", "json")
	rep := &diagnose.Report{}
	if err := json.Unmarshal([]byte(out), rep); err != nil {
		t.Fatalf("explain: %v\n%s", err, out)
	}
	var removal *diagnose.RemovalCheck
	for _, f := range rep.Findings {
		if f.Finalizer == key {
			removal = f.Removal
		}
	}
	// Without the release record the protect-finalizers policy refuses the
	// dry-run, which explain then reports as not checked (no removalDryRun).
	if removal == nil || !removal.Allowed {
		t.Fatalf("explain's removal dry-run of %s = %+v, want allowed\n%s", key, removal, out)
	}
	if out, errOut, err := run("release", "configmap/attached", "-n", ns, "--finalizer", key, "--reason", "bucket emptied by hand", "--yes",
		"--audit-log", filepath.Join(t.TempDir(), "audit.jsonl")); err != nil {
		t.Fatalf("release: %v\n%s%s", err, out, errOut)
	}
	after, err := admin.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
	if err == nil && slices.Contains(after.Finalizers, key) {
		t.Errorf("after release: finalizers %v", after.Finalizers)
	}
}
