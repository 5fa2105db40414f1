/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

// Causes of this family (see report.go).
const (
	// CauseKubeletReportsFailure: past its grace period on a Ready node,
	// and the kubelet says in a Warning Event why it cannot stop the pod
	// (D3).
	CauseKubeletReportsFailure = "KubeletReportsFailure"
)

// kubeletFailures are the reasons of the kubelet's Warning Events that say
// why a pod does not go (pkg/kubelet/events/event.go), with who fixes it
// and how.
var kubeletFailures = map[string]struct{ fixOwner, remedy string }{
	"failedkillpod": {"node owner (container runtime)",
		"the container runtime cannot stop the pod's containers or sandbox: check containerd/CRI-O on the node (crictl ps, crictl stopp) and its logs; a forced delete only removes the API object while the containers may still run"},
	"exceededgraceperiod": {"node owner (container runtime)",
		"the container runtime did not stop the containers within the grace period: check the runtime on the node; a forced delete only removes the API object"},
	"failedprestophook": {"application owner",
		"the preStop hook fails or hangs: fix the hook or shorten terminationGracePeriodSeconds"},
	"failedunmount": {"storage owner (CSI node plugin, NFS or block device)",
		"a volume of the pod cannot be unmounted on the node: check the CSI node plugin's logs on that node and what still holds the mount (lsof, fuser); a forced delete leaves the volume mounted and attached"},
	"failedunmapdevice": {"storage owner (CSI node plugin or block device)",
		"a block volume of the pod cannot be unmapped on the node: check the CSI node plugin on that node; a forced delete leaves the device mapped"},
	"failedsync": {"node owner",
		"the kubelet fails to sync the pod: read the kubelet's logs on the node"},
}

// kubeletSays turns D3 (a pod past its grace period on a Ready node) into
// the kubelet's own words, when it wrote a Warning Event saying why it
// cannot stop the pod (FailedKillPod, FailedUnMount, ...). The newest such
// Event names the cause, its message cleaned and bounded.
func (e *Explainer) kubeletSays(ctx context.Context, pod *corev1.Pod, f *Finding) {
	all, err := e.c.WarningEvents(ctx, pod.Namespace)
	if err != nil {
		return
	}
	var newest *corev1.Event
	for i := range all {
		ev := &all[i]
		if ev.InvolvedObject.UID != pod.UID {
			continue
		}
		from := ev.Source.Component
		if from == "" {
			from = ev.ReportingController
		}
		if from != "kubelet" {
			continue
		}
		if _, known := kubeletFailures[strings.ToLower(ev.Reason)]; !known {
			continue
		}
		if newest == nil || eventTime(ev).After(eventTime(newest)) {
			newest = ev
		}
	}
	if newest == nil {
		return
	}
	fix := kubeletFailures[strings.ToLower(newest.Reason)]
	count := ""
	if newest.Count > 1 {
		count = fmt.Sprintf(", ×%d", newest.Count)
	}
	f.Cause = CauseKubeletReportsFailure
	f.Message = fmt.Sprintf("the kubelet says: %s: %s (on node %s%s, %s ago); %s", cleantext.Clean(newest.Reason, 64), cleantext.Clean(newest.Message, maxSaid),
		pod.Spec.NodeName, count, Age(e.now.Sub(eventTime(newest))), f.Message)
	f.FixOwner = fix.fixOwner
	f.Remedy = fix.remedy
}
