/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func TestStatusListsTerminating(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	configMap(t, ns, "alive", "kubectl-create", []string{"example.com/x"})
	stuckConfigMap(t, ns, "stuck")
	progress, _ := json.Marshal(finalizer.Progress{Finalizer: "teardown.dev/dns", State: finalizer.StatePending, Message: "step remove-dns: waiting for the DNS API", Attempts: 3, Updated: time.Now()})
	configMap(t, ns, "guarded", "teardown-controller", []string{"teardown.dev/dns"}, func(cm *corev1.ConfigMap) {
		cm.Annotations = map[string]string{finalizer.ProgressAnnotation("teardown.dev/dns"): string(progress)}
	})
	deleteConfigMap(t, ns, "guarded", "")
	gone := newNamespace(t)
	configMap(t, gone, "held", "kubectl-edit", []string{"nobody.teardown.invalid/stale"})
	deleteNamespace(t, gone)
	namespaceCondition(t, gone, "NamespaceFinalizersRemaining")

	r := cli(t, "", nil, "status", "-A", "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("status: exit %d: %s", r.code, r.err)
	}
	rep := &StatusReport{}
	if err := json.Unmarshal([]byte(r.out), rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range rep.Items {
		if it.Object.Namespace == ns || it.Object.Namespace == gone || it.Object.Name == gone {
			got[it.Object.String()] = it.Blocker
		}
	}
	// Each line is explain's root blocker: where it is, what, and why.
	want := map[string][]string{
		"ConfigMap " + ns + "/stuck": {`nobody.teardown.invalid/stale: OrphanFinalizer [B5]: nothing owns "nobody.teardown.invalid/stale"`},
		"ConfigMap " + ns + "/guarded": {`teardown.dev/dns: FinalizerOwnerGone [B1]: teardown-controller owns "teardown.dev/dns" and does not look alive (missing) (last progress: Pending after 3 attempts`,
			"; no Deployment, StatefulSet, DaemonSet, pod or Lease named or labelled teardown-controller"},
		"ConfigMap " + gone + "/held": {`nobody.teardown.invalid/stale: OrphanFinalizer [B5]: nothing owns "nobody.teardown.invalid/stale"`},
		"Namespace " + gone:           {"nobody.teardown.invalid/stale: OrphanFinalizer [B5] ConfigMap " + gone + `/held: nothing owns "nobody.teardown.invalid/stale"`},
	}
	if len(got) != len(want) {
		t.Errorf("status lists %d of the objects, want %d: %v", len(got), len(want), got)
	}
	for obj, parts := range want {
		if !strings.HasPrefix(got[obj], parts[0]) || (len(parts) > 1 && !strings.Contains(got[obj], parts[1])) {
			t.Errorf("status %s = %q, want %q", obj, got[obj], parts)
		}
	}
	r = cli(t, "", nil, "status", "-n", ns)
	if r.code != ExitOK || !strings.HasPrefix(r.out, "KIND") || strings.Contains(r.out, gone) || !strings.Contains(r.out, "guarded") {
		t.Errorf("status -n: exit %d\n%s", r.code, r.out)
	}
}

func TestPlanCascade(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	root := configMap(t, ns, "root", "kubectl-create", nil)
	other := configMap(t, ns, "other-owner", "kubectl-create", nil)
	owned := func(blocking bool, owners ...*corev1.ConfigMap) func(*corev1.ConfigMap) {
		return func(cm *corev1.ConfigMap) {
			for _, o := range owners {
				cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr.To(blocking)})
			}
		}
	}
	child := configMap(t, ns, "child", "kubectl-create", []string{"example.com/hold"}, owned(true, root))
	configMap(t, ns, "grandchild", "kubectl-create", nil, owned(false, child))
	configMap(t, ns, "shared", "kubectl-create", nil, owned(false, root, other))

	plan := func(cascade string) *PlanReport {
		t.Helper()
		r := cli(t, "", nil, "plan", "configmap/root", "-n", ns, "--cascade", cascade, "-o", "json")
		if r.code != ExitOK {
			t.Fatalf("plan: exit %d: %s", r.code, r.err)
		}
		p := &PlanReport{}
		if err := json.Unmarshal([]byte(r.out), p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type row struct {
		Name, Action string
		Blocks       bool
	}
	flatten := func(p *PlanReport) []row {
		var out []row
		var walk func(n PlanNode)
		walk = func(n PlanNode) {
			out = append(out, row{n.Object.Name, n.Action, n.BlocksOwner})
			for _, c := range n.Children {
				walk(c)
			}
		}
		walk(p.Root)
		return out
	}
	cases := map[string][]row{
		cascadeForeground: {{"root", actionDelete, false}, {"child", actionHold, true}, {"grandchild", actionDelete, false}, {"shared", actionKeep, false}},
		cascadeBackground: {{"root", actionDelete, false}, {"child", actionHold, false}, {"grandchild", actionDelete, false}, {"shared", actionKeep, false}},
		cascadeOrphan:     {{"root", actionDelete, false}, {"child", actionOrphan, false}, {"shared", actionOrphan, false}},
	}
	for cascade, want := range cases {
		if diff := cmp.Diff(want, flatten(plan(cascade))); diff != "" {
			t.Errorf("plan --cascade %s (-want +got):\n%s", cascade, diff)
		}
	}
	// Nothing was deleted.
	for _, n := range []string{"root", "child", "grandchild", "shared"} {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), n, metav1.GetOptions{})
		if err != nil || cm.DeletionTimestamp != nil {
			t.Errorf("%s touched by plan: %v", n, err)
		}
	}
	_ = types.UID("")
}

// status --watch redraws when a deletion changes, until interrupted, and
// shows a teardown finishing; while nothing changes it lists nothing (it
// watches: the ecosystem review found it re-listing every kind every 2 s).
func TestStatusWatch(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	stuckConfigMap(t, ns, "soon-gone")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var out testenv.SyncBuffer
	flags := kubeFlags(t)
	nsFlag := ns
	flags.Namespace = &nsFlag
	log := &requestLog{}
	flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{next: rt, log: log} })
		return c
	}
	lists := func() int {
		log.mu.Lock()
		defer log.mu.Unlock()
		n := 0
		for _, r := range log.reqs {
			if strings.HasPrefix(r, "GET ") && !strings.Contains(r, "watch=true") && strings.Contains(r, "/configmaps") {
				n++
			}
		}
		return n
	}
	root := newRootCommand(flags, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	root.SetArgs([]string{"status", "-n", ns, "--watch", "--interval", "500ms"})
	root.SetContext(ctx)
	done := make(chan error, 1)
	go func() { done <- root.Execute() }()
	testenv.Eventually(t, 6*time.Second, "the first frame", func(context.Context) (bool, error) {
		return strings.Contains(out.String(), "soon-gone"), nil
	})
	// The watches' first events (the replay of the watch cache) may draw
	// one more frame; after that, quiet.
	time.Sleep(1500 * time.Millisecond)
	quietFrom := lists()
	time.Sleep(3 * time.Second)
	if n := lists() - quietFrom; n > 0 {
		t.Errorf("status --watch listed ConfigMaps %d times in 3 s while nothing changed (--interval 500ms)", n)
	}
	// A change of the object being deleted draws a frame.
	frames := strings.Count(out.String(), "soon-gone")
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), "soon-gone", types.MergePatchType, []byte(`{"metadata":{"annotations":{"step":"2"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 6*time.Second, "a frame for the change", func(context.Context) (bool, error) {
		return strings.Count(out.String(), "soon-gone") > frames, nil
	})
	plugintest.DropFinalizers(cs, ns, "soon-gone")
	testenv.Eventually(t, 6*time.Second, "a refresh without it", func(context.Context) (bool, error) {
		return strings.HasSuffix(strings.TrimSpace(out.String()), "Nothing is terminating in namespace "+ns+"."), nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("status --watch: %v", err)
	}
	got := out.String()
	if !strings.Contains(got, "soon-gone") || !strings.HasSuffix(strings.TrimSpace(got), "Nothing is terminating in namespace "+ns+".") || strings.Count(got, "KIND") < 2 {
		t.Errorf("status --watch output:\n%s", got)
	}
}

// status --stuck-after exits with ExitBlocked once something has been
// Terminating for longer than the threshold, in every output format, and
// says so under the table.
func TestStatusStuckAfter(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	stuckConfigMap(t, ns, "held")
	if r := cli(t, "", nil, "status", "-n", ns, "--stuck-after", "1h"); r.code != ExitOK || strings.Contains(r.out+r.err, "stuck:") {
		t.Errorf("nothing older than 1h: exit %d\n%s%s", r.code, r.out, r.err)
	}
	time.Sleep(2 * time.Second)
	r := cli(t, "", nil, "status", "-n", ns, "--stuck-after", "1s")
	// The summary goes to stderr, beside the table on stdout.
	if r.code != ExitBlocked || !strings.Contains(r.out, "held") || strings.Contains(r.out, "stuck:") || !strings.Contains(r.err, "stuck: 1 object(s) Terminating for more than 1s") {
		t.Errorf("status --stuck-after 1s: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = cli(t, "", nil, "status", "-n", ns, "--stuck-after", "1s", "-o", "json")
	rep := &StatusReport{}
	if err := json.Unmarshal([]byte(r.out), rep); err != nil {
		t.Fatal(err)
	}
	if r.code != ExitBlocked || rep.Stuck != 1 || rep.StuckAfter != "1s" || len(rep.Items) != 1 || !rep.Items[0].Stuck {
		t.Errorf("status --stuck-after 1s -o json: exit %d\n%s", r.code, r.out)
	}
	for _, args := range [][]string{{"--stuck-after", "-1s"}, {"--stuck-after", "1m", "--watch"}} {
		if r := cli(t, "", nil, append([]string{"status", "-n", ns}, args...)...); r.code != ExitUsage {
			t.Errorf("status %v: exit %d, want %d", args, r.code, ExitUsage)
		}
	}
}
