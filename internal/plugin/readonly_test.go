/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// explain, status and plan never write to the cluster: with an admin they
// send only GETs and server-side dry-runs, and a user who may only read gets
// the same diagnosis.
func TestReadOnlyCommandsNeverWrite(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	root := configMap(t, ns, "root", "kubectl-create", nil)
	configMap(t, ns, "child", "kubectl-create", []string{"nobody.teardown.invalid/hold"}, func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "root", UID: root.UID, BlockOwnerDeletion: ptr.To(true)}}
	})
	configMap(t, ns, "stuck", "kubectl-edit", []string{"nobody.teardown.invalid/stale"})
	deleteConfigMap(t, ns, "stuck", "")
	gone := newNamespace(t)
	configMap(t, gone, "held", "kubectl-edit", []string{"nobody.teardown.invalid/stale"})
	deleteNamespace(t, gone)

	commands := [][]string{
		{"explain", "configmap/stuck", "-n", ns},
		{"explain", "configmap/root", "-n", ns},
		{"explain", "namespace/" + gone},
		{"explain", "namespace/" + gone, "-o", "yaml"},
		{"status"},
		{"status", "-A"},
		{"status", "-n", ns, "-o", "json"},
		{"plan", "configmap/root", "-n", ns, "--cascade", "foreground"},
		{"plan", "namespace/" + ns, "-o", "json"},
	}
	ro := plugintest.ReadOnlyKubeconfig(t, cfg, cs, "teardown-readonly")
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			log := &requestLog{}
			admin := cli(t, "", log, args...)
			if admin.code != ExitOK && admin.code != ExitBlocked {
				t.Fatalf("admin: exit %d: %s", admin.code, admin.err)
			}
			onlyReads(t, log)
			reader := cli(t, ro, nil, args...)
			if reader.code != admin.code {
				t.Errorf("read-only user: exit %d, admin %d: %s", reader.code, admin.code, reader.err)
			}
		})
	}
	// The read-only user gets the same causes from explain (only the
	// dry-run checks, which need patch rights, are missing).
	admin := cli(t, "", nil, "explain", "namespace/"+gone, "-o", "json")
	reader := cli(t, ro, nil, "explain", "namespace/"+gone, "-o", "json")
	if causes(t, admin.out) != causes(t, reader.out) {
		t.Errorf("causes differ:\nadmin:  %s\nreader: %s", causes(t, admin.out), causes(t, reader.out))
	}
}

func causes(t *testing.T, out string) string {
	t.Helper()
	rep := &diagnose.Report{}
	if err := json.Unmarshal([]byte(out), rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var cs []string
	diagnose.WalkFindings(rep.Findings, func(f *diagnose.Finding) { cs = append(cs, f.Cause) })
	return strings.Join(cs, ",")
}
