/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// stuckConfigMap creates a deleted ConfigMap held by an orphan finalizer.
func stuckConfigMap(t *testing.T, ns, name string, finalizers ...string) *corev1.ConfigMap {
	t.Helper()
	if len(finalizers) == 0 {
		finalizers = []string{"nobody.teardown.invalid/stale"}
	}
	configMap(t, ns, name, "kubectl-edit", finalizers)
	deleteConfigMap(t, ns, name, "")
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// onlyReads fails if log holds a request that could change the cluster:
// anything but GET, or a write without dryRun=All.
func onlyReads(t *testing.T, log *requestLog) {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.reqs) == 0 {
		t.Fatal("no request recorded")
	}
	for _, r := range log.reqs {
		if strings.HasPrefix(r, "GET ") {
			continue
		}
		if strings.Contains(r, "dryRun=All") {
			continue
		}
		// A SubjectAccessReview is a question to the authorizer (B4); the
		// API server stores nothing.
		if r == "POST /apis/authorization.k8s.io/v1/subjectaccessreviews?" {
			continue
		}
		t.Errorf("a request could write: %s", r)
	}
}

// Release never writes without confirmation: without --yes and without a
// terminal it is a dry-run, and every request it sends is a read or a
// server-side dry-run.
func TestReleaseWithoutConfirmationWritesNothing(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	before := stuckConfigMap(t, ns, "cm")
	log := &requestLog{}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := cli(t, "", log, "release", "configmap/cm", "-n", ns, "--finalizer", "nobody.teardown.invalid/stale", "--reason", "test", "--audit-log", audit)
	if r.code != ExitOK || !strings.Contains(r.out, "Dry-run: nothing changed") || !strings.Contains(r.out, "OrphanFinalizer") {
		t.Fatalf("release dry-run: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	onlyReads(t, log)
	after, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "cm", metav1.GetOptions{})
	if err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the object changed: %v, rv %s -> %s", err, before.ResourceVersion, after.ResourceVersion)
	}
	if _, err := os.Stat(audit); !os.IsNotExist(err) {
		t.Errorf("a dry-run wrote the audit log: %v", err)
	}

	// On a terminal, anything but the finalizer's name declines.
	var out bytes.Buffer
	o := newReleaseOptions(kubeFlags(t), genericiooptions.IOStreams{In: strings.NewReader("yes\n"), Out: &out, ErrOut: &out})
	o.interactive = func() bool { return true }
	cmd := standaloneRelease(o)
	cmd.SetArgs([]string{"configmap/cm", "-n", ns, "--finalizer", "nobody.teardown.invalid/stale", "--reason", "test", "--audit-log", audit})
	cmd.SetContext(t.Context())
	if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "Not confirmed: nothing changed") {
		t.Fatalf("prompt: %v\n%s", err, out.String())
	}
	after, _ = cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "cm", metav1.GetOptions{})
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("declining changed the object")
	}
}

// --dry-run, as kubectl users type it, never writes or prompts, even on a
// terminal that would have confirmed; with --yes it is a usage error.
func TestReleaseDryRunFlag(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	before := stuckConfigMap(t, ns, "cm")
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, flag := range []string{"--dry-run", "--dry-run=server", "--dry-run=client"} {
		var out bytes.Buffer
		o := newReleaseOptions(kubeFlags(t), genericiooptions.IOStreams{In: strings.NewReader("nobody.teardown.invalid/stale\n"), Out: &out, ErrOut: &out})
		o.interactive = func() bool { return true } // would confirm: the typed name
		cmd := standaloneRelease(o)
		cmd.SetArgs([]string{"configmap/cm", "-n", ns, "--finalizer", "nobody.teardown.invalid/stale", "--reason", "test", "--audit-log", audit, flag})
		cmd.SetContext(t.Context())
		if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "Dry-run: nothing changed") || strings.Contains(out.String(), "Type the finalizer") {
			t.Fatalf("%s: %v\n%s", flag, err, out.String())
		}
	}
	after, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "cm", metav1.GetOptions{})
	if err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a --dry-run changed the object: %v, rv %s -> %s", err, before.ResourceVersion, after.ResourceVersion)
	}
	r := cli(t, "", nil, "release", "configmap/cm", "-n", ns, "--finalizer", "nobody.teardown.invalid/stale", "--reason", "test", "--audit-log", audit, "--dry-run", "--yes")
	if r.code != ExitUsage || !strings.Contains(r.err, "contradict") {
		t.Errorf("--dry-run --yes: exit %d, %q; want a usage error", r.code, r.err)
	}
	r = cli(t, "", nil, "release", "configmap/cm", "-n", ns, "--finalizer", "nobody.teardown.invalid/stale", "--reason", "test", "--dry-run=maybe")
	if r.code != ExitUsage {
		t.Errorf("--dry-run=maybe: exit %d, %q; want a usage error", r.code, r.err)
	}
}

// standaloneRelease is the release command with the kube flags, for tests
// that reach into its options.
func standaloneRelease(o *ReleaseOptions) *cobra.Command {
	cmd := newReleaseCommand(o)
	o.flags.AddFlags(cmd.Flags())
	cmd.SilenceUsage = true
	return cmd
}

// kubeFlags are admin flags for commands built without the root.
func kubeFlags(t *testing.T) *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(true)
	kc, cache := kubeconfigPath, t.TempDir()
	f.KubeConfig, f.CacheDir = &kc, &cache
	return f
}

// With --yes (or the typed name on a terminal) release removes exactly one
// finalizer, annotates the object and appends an audit record.
func TestReleaseAppliesAndAudits(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	stuckConfigMap(t, ns, "two", "nobody.teardown.invalid/stale", "example.com/keep")
	audit := filepath.Join(t.TempDir(), "audit.jsonl")

	var out bytes.Buffer
	o := newReleaseOptions(kubeFlags(t), genericiooptions.IOStreams{In: strings.NewReader("nobody.teardown.invalid/stale\n"), Out: &out, ErrOut: &out})
	o.interactive = func() bool { return true }
	cmd := standaloneRelease(o)
	cmd.SetArgs([]string{"configmap/two", "-n", ns, "--finalizer", "nobody.teardown.invalid/stale", "--reason", "typo in a manifest", "--audit-log", audit})
	cmd.SetContext(t.Context())
	if err := cmd.Execute(); err != nil {
		t.Fatalf("release: %v\n%s", err, out.String())
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "two", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Finalizers) != 1 || cm.Finalizers[0] != "example.com/keep" {
		t.Errorf("finalizers = %v, want only example.com/keep", cm.Finalizers)
	}
	if !strings.Contains(cm.Annotations[AuditAnnotation], "typo in a manifest") {
		t.Errorf("audit annotation = %q", cm.Annotations[AuditAnnotation])
	}

	// --yes on the last finalizer: the object goes.
	r := cli(t, "", nil, "release", "configmap/two", "-n", ns, "--finalizer", "example.com/keep", "--reason", "done by hand", "--yes", "--audit-log", audit)
	if r.code != ExitOK || !strings.Contains(r.out, "now: deleted") {
		t.Fatalf("release --yes: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "two", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("object still there: %v", err)
	}
	events, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=FinalizerReleased"})
	if err != nil || len(events.Items) != 2 || !strings.Contains(events.Items[0].Message+events.Items[1].Message, "done by hand") {
		t.Errorf("audit Events = %v, %v", err, events)
	}
	recs := readAudit(t, audit)
	if len(recs) != 2 {
		t.Fatalf("audit records = %d, want 2", len(recs))
	}
	last := recs[1]
	if last.Result != "applied" || !strings.HasPrefix(last.After, "deleted") || last.User == "" || last.Reason != "done by hand" || last.Evidence == nil || last.DryRun == nil || !last.DryRun.Allowed {
		t.Errorf("audit record = %+v", last)
	}
}

func readAudit(t *testing.T, path string) []AuditRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []AuditRecord
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		var r AuditRecord
		if err := json.Unmarshal(s.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

var rvRE = regexp.MustCompile(`--resource-version (\S+)`)

// A change between the dry-run and the apply makes the apply fail safely:
// both when the apply names the dry-run's resourceVersion, and when the
// object changes inside one run between the evidence and the write.
func TestReleaseFailsSafelyOnChange(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	stuckConfigMap(t, ns, "moving")
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	args := []string{"release", "configmap/moving", "-n", ns, "--finalizer", "nobody.teardown.invalid/stale", "--reason", "test", "--audit-log", audit}
	dry := cli(t, "", nil, args...)
	m := rvRE.FindStringSubmatch(dry.out)
	if dry.code != ExitOK || m == nil {
		t.Fatalf("dry-run: exit %d\n%s", dry.code, dry.out)
	}
	touch := func() {
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), "moving", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"touched":"`+strings.ReplaceAll(t.Name(), "/", "-")+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	touch()
	r := cli(t, "", nil, append(args, "--yes", "--resource-version", m[1])...)
	if r.code != ExitError || !strings.Contains(r.err, "changed since the dry-run") {
		t.Errorf("apply after a change: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	assertStillHeld := func() {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "moving", metav1.GetOptions{})
		if err != nil || len(cm.Finalizers) != 1 {
			t.Fatalf("the finalizer was removed: %v %v", err, cm)
		}
	}
	assertStillHeld()

	// Inside one run: the object changes after the evidence was gathered.
	var out bytes.Buffer
	o := newReleaseOptions(kubeFlags(t), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	o.beforeApply = func() {
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), "moving", types.MergePatchType, []byte(`{"metadata":{"labels":{"moved":"yes"}}}`), metav1.PatchOptions{}); err != nil {
			t.Error(err)
		}
	}
	cmd := standaloneRelease(o)
	cmd.SetArgs(append(args[1:], "--yes"))
	cmd.SetContext(t.Context())
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "changed since the evidence was gathered") {
		t.Errorf("apply with a change in between: %v\n%s", err, out.String())
	}
	assertStillHeld()
	recs := readAudit(t, audit)
	if len(recs) != 1 || !strings.HasPrefix(recs[0].Result, "failed") {
		t.Errorf("audit = %+v, want one failed record", recs)
	}
}

// The namespace's kubernetes token is refused without --force, and the
// refusal shows what would be orphaned.
func TestReleaseRefusesNamespaceKubernetes(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	configMap(t, ns, "left-behind", "kubectl-create", []string{"example.com/hold"})
	deleteNamespace(t, ns)
	r := cli(t, "", nil, "release", "namespace/"+ns, "--finalizer", "kubernetes", "--reason", "folklore", "--yes", "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	if r.code != ExitError || !strings.Contains(r.err, "refusing") || !strings.Contains(r.out, "will orphan: ConfigMap "+ns+"/left-behind") {
		t.Fatalf("release kubernetes: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	n, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil || len(n.Spec.Finalizers) != 1 {
		t.Errorf("namespace spec finalizers changed: %v %v", err, n.Spec.Finalizers)
	}
}

// Objects not being deleted are refused: their owner would re-add the key.
func TestReleaseRefusesLiveObject(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	configMap(t, ns, "live", "kubectl-create", []string{"example.com/x"})
	r := cli(t, "", nil, "release", "configmap/live", "-n", ns, "--finalizer", "example.com/x", "--reason", "x", "--yes", "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	if r.code != ExitError || !strings.Contains(r.err, "not being deleted") {
		t.Errorf("exit %d\n%s", r.code, r.err)
	}
	r = cli(t, "", nil, "release", "configmap/live", "-n", ns, "--finalizer", "example.com/x")
	if r.code != ExitUsage {
		t.Errorf("missing --reason: exit %d, want %d", r.code, ExitUsage)
	}
}

// release --force on a namespace's kubernetes token does what the folklore
// does, after printing what it orphans; explain then finds the orphans of
// the deleted namespace (A12).
func TestReleaseForceThenOrphansInDeletedNamespace(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	node := "node-" + ns
	plugintest.NotReadyNode(t, cs, node)
	boundPod(t, ns, "stuck-0", node, nil) // keeps the namespace controller on pods
	configMap(t, ns, "leftover", "kubectl-create", nil)
	deleteNamespace(t, ns)
	r := cli(t, "", nil, "release", "namespace/"+ns, "--finalizer", "kubernetes", "--reason", "proving A12", "--force", "--yes", "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	if r.code != ExitOK || !strings.Contains(r.out, "will orphan: ConfigMap "+ns+"/leftover") {
		t.Fatalf("release --force: exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	testenv.Eventually(t, 30*time.Second, "the namespace to go", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	rep := explainJSON(t, "namespace/"+ns)
	f := plugintest.Find(rep, diagnose.CauseOrphanedContent, ns)
	if f == nil || f.Catalog != "A12" || !rep.Blocked {
		t.Fatalf("no A12 finding: %+v", rep)
	}
	assertRemedy(t, f, "kubectl create namespace "+ns)
	if plugintest.Find(rep, diagnose.CauseOrphanedContent, "leftover") == nil {
		t.Errorf("the leftover ConfigMap is not listed: %+v", f.Children)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "leftover", metav1.DeleteOptions{})
	})
}
