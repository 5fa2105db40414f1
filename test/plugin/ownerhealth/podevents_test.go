/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// D3 in the kubelet's words: a pod past its grace period on a Ready node
// whose kubelet says why it cannot stop it, in a Warning Event
// (FailedKillPod, FailedUnMount: pkg/kubelet/events/event.go). explain
// names the newest as the cause, its message cleaned and bounded.
func TestExplainKubeletCannotStopPod(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ns := plugintest.NewNamespace(t, cs, "kubelet")
	node := "node-" + ns
	readyNode(t, node)
	for _, tc := range []struct {
		pod, reason, message, fixOwner, remedy string
	}{
		// The message of kuberuntime's KillPod when the runtime times out
		// (pkg/kubelet/kuberuntime: "error killing pod: ...").
		{"api-0", "FailedKillPod",
			`error killing pod: failed to "KillPodSandbox" for "0b5e1c2d" with KillPodSandboxError: "rpc error: code = DeadlineExceeded desc = context deadline exceeded"`,
			"node owner (container runtime)", "check containerd/CRI-O on the node"},
		// The volume manager's unmount failure, with a hostile tail: a
		// line break, a bidirectional override and 10 kB of text.
		{"data-0", "FailedUnMount",
			`UnmountVolume.TearDown failed for volume "pvc-7f3a" (UniqueName: "kubernetes.io/csi/ebs.csi.aws.com^vol-0abc") pod "data-0": rpc error: code = Internal desc = umount: target is busy` + "\n\u202e" + strings.Repeat("x", 10000),
			"storage owner (CSI node plugin, NFS or block device)", "check the CSI node plugin's logs on that node"},
	} {
		pod := runningPod(t, ns, tc.pod, node, map[string]string{"app": tc.pod})
		if err := cs.CoreV1().Pods(ns).Delete(ctx, tc.pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		target := []string{"pod/" + tc.pod, "-n", ns}
		rep := explain(t, target...)
		if f := root(t, rep, diagnose.CausePodNotKilled, tc.pod); !strings.Contains(f.Message, "the kubelet cannot stop it") {
			t.Errorf("%s: before the kubelet says anything: %q", tc.pod, f.Message)
		}

		kubeletWarning(t, pod, node, tc.reason, tc.message, 12)
		rep = explain(t, target...)
		blocked(t, rep, target...)
		f := root(t, rep, diagnose.CauseKubeletReportsFailure, tc.pod)
		mustContain(t, "message", f.Message, "the kubelet says: "+tc.reason+": ", "on node "+node+", ×12")
		mustContain(t, "message", f.Message, strings.SplitN(tc.message, "\n", 2)[0][:120])
		if strings.ContainsAny(f.Message, "\n\u202e") || strings.Contains(f.Message, strings.Repeat("x", 400)) {
			t.Errorf("%s: the event's message is repeated raw: %d bytes", tc.pod, len(f.Message))
		}
		if f.Catalog != "D3" || f.FixOwner != tc.fixOwner {
			t.Errorf("%s: catalog %q, fix owner %q", tc.pod, f.Catalog, f.FixOwner)
		}
		mustContain(t, "remedy", f.Remedy, tc.remedy)
		if tc.pod == "api-0" {
			recordText(t, "explain-kubelet.txt", "explain", "pod/"+tc.pod, "-n", ns)
		}
	}
}
