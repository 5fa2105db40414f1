/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/teardown-dev/teardown/internal/cleantext"
	"github.com/teardown-dev/teardown/internal/diagnose/signals"
)

// unhealthyPrefix starts the evidence of an owner whose workload exists but
// has no ready replica: it is installed, not missing, and says so.
const unhealthyPrefix = "installed but unhealthy: "

// unhealthy is the evidence for a workload found with no ready replica:
// "installed but unhealthy: Deployment kube-system/ebs-csi-controller at 0
// of 2 ready (2 pod(s) Pending, not scheduled to a node)", the why read from
// its pods' status as the kubelet and the scheduler write it.
func (e *Explainer) unhealthy(ctx context.Context, w workload) string {
	if w.Desired == 0 && w.Ref.Kind != "DaemonSet" {
		return fmt.Sprintf("installed but scaled to 0: %s has no replica", w.Ref)
	}
	s := fmt.Sprintf("%s%s at %d of %d ready", unhealthyPrefix, w.Ref, w.Ready, w.Desired)
	if why := e.podsWhy(ctx, w); why != "" {
		s += " (" + why + ")"
	}
	if w.Health != "" {
		s += "; its status says " + w.Health
	}
	return s
}

// ownerState says how an owner found stopped is: "is installed but
// unhealthy: ..." when its workload exists, "does not look alive (down)"
// otherwise.
func ownerState(o *Owner) string {
	for i := len(o.Evidence) - 1; i >= 0; i-- {
		if strings.HasPrefix(o.Evidence[i], unhealthyPrefix) || strings.HasPrefix(o.Evidence[i], "installed but scaled to 0") {
			return "is " + o.Evidence[i]
		}
	}
	return fmt.Sprintf("does not look alive (%s)", o.State)
}

// installedButUnhealthy says whether the owner's workload exists with no
// ready replica.
func installedButUnhealthy(o *Owner) bool {
	return o.Workload != nil && strings.HasPrefix(ownerState(o), "is "+unhealthyPrefix)
}

// scaledToZero says whether the owner's workload exists with no replica
// wanted.
func scaledToZero(o *Owner) bool {
	return o.Workload != nil && strings.HasPrefix(ownerState(o), "is installed but scaled to 0")
}

// deploymentHealth is what a Deployment's conditions say against it, as
// the deployment controller writes them: Available=False
// (MinimumReplicasUnavailable), Progressing=False
// (ProgressDeadlineExceeded), ReplicaFailure=True (FailedCreate: a quota,
// an admission webhook refusing its pods).
func deploymentHealth(conds []appsv1.DeploymentCondition) string {
	var out []string
	for _, c := range conds {
		bad := (c.Type == appsv1.DeploymentAvailable || c.Type == appsv1.DeploymentProgressing) && c.Status == corev1.ConditionFalse ||
			c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue
		if !bad {
			continue
		}
		s := fmt.Sprintf("%s=%s", c.Type, c.Status)
		detail := cleantext.Clean(c.Reason, 64)
		if m := cleantext.Clean(c.Message, 160); m != "" {
			if detail != "" {
				detail += ": "
			}
			detail += m
		}
		if detail != "" {
			s += " (" + detail + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// podsWhy summarizes why a workload's pods are not ready, most common
// first: "2 pod(s) Pending, not scheduled to a node; 1 pod(s) container
// manager CrashLoopBackOff (restarted 7 times, last exit 1: Error)".
func (e *Explainer) podsWhy(ctx context.Context, w workload) string {
	pods, err := e.c.Pods(ctx, w.Ref.Namespace)
	if err != nil {
		return ""
	}
	counts := map[string]int{}
	var order []string
	for i := range pods {
		p := &pods[i]
		if !ownedByWorkload(p, w) {
			continue
		}
		why := podWhy(p)
		if why == "" {
			continue
		}
		if counts[why] == 0 {
			order = append(order, why)
		}
		counts[why]++
	}
	if len(order) == 0 {
		if w.Ref.Kind != "Pod" {
			return "no pod of it exists: read its events and its ReplicaSet's"
		}
		return ""
	}
	sort.SliceStable(order, func(i, j int) bool { return counts[order[i]] > counts[order[j]] })
	var parts []string
	for i, why := range order {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d other reason(s)", len(order)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%d pod(s) %s", counts[why], why))
	}
	return strings.Join(parts, "; ")
}

// ownedByWorkload says whether p belongs to w: its controller is w (a
// StatefulSet's or DaemonSet's pod), one of w's ReplicaSets (named
// <deployment>-<pod-template-hash>, as the deployment controller names
// them), or p is w.
func ownedByWorkload(p *corev1.Pod, w workload) bool {
	if p.Namespace != w.Ref.Namespace {
		return false
	}
	if w.Ref.Kind == "Pod" {
		return p.Name == w.Ref.Name
	}
	for _, r := range p.OwnerReferences {
		if r.Controller == nil || !*r.Controller {
			continue
		}
		switch {
		case r.Kind == w.Ref.Kind && r.Name == w.Ref.Name:
			return true
		case w.Ref.Kind == "Deployment" && r.Kind == "ReplicaSet" && p.Labels["pod-template-hash"] != "" && r.Name == w.Ref.Name+"-"+p.Labels["pod-template-hash"]:
			return true
		}
	}
	return false
}

// podWhy is why one pod is not ready, from the engine's one reading of a
// pod (signals.JudgePod); "" when it is.
func podWhy(p *corev1.Pod) string { return signals.JudgePod(p).Why }
