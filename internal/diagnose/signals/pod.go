/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

// PodJudgement is the engine's one reading of a pod's status: why it is not
// ready, whether it cannot run at all, whether it ended in failure, and the
// words behind that. The engine says it (an owner's unhealthy workload, what
// a Teardown step waits on, a claim's user) and family 5 reads a helper's
// failure from it (PodFailure). Every text from the kubelet, the scheduler or
// a container is cleaned (cleantext) and bounded, so a cut never splits a
// character.
type PodJudgement struct {
	// Why is why it is not ready, in one line; "" when it is.
	Why string
	// CannotRun: a container waits for a reason other than starting
	// (ImagePullBackOff, CrashLoopBackOff, CreateContainerConfigError...),
	// or the scheduler finds no node for it; not while it starts, finishes
	// or is being deleted.
	CannotRun bool
	// Failed: it ended in failure (phase Failed).
	Failed bool
	// Reason is short ("Failed: Error (exit 1)", "Unschedulable",
	// "ImagePullBackOff") and Message the words behind it (a container's
	// termination message, the scheduler's, the kubelet's), for a pod that
	// failed or cannot run; both "" otherwise.
	Reason, Message string
}

// JudgePod reads p's status.
func JudgePod(p *corev1.Pod) PodJudgement {
	if p.DeletionTimestamp != nil {
		return PodJudgement{Why: "terminating"}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	switch p.Status.Phase {
	case corev1.PodFailed:
		j := PodJudgement{Why: fmt.Sprintf("%s (%s)", p.Status.Phase, cleantext.Clean(p.Status.Reason, 40)), Failed: true, Reason: "Failed"}
		if p.Status.Reason != "" {
			j.Reason += ": " + cleantext.Clean(p.Status.Reason, 40)
			j.Message = p.Status.Message
		}
		for _, cs := range statuses {
			term := cs.State.Terminated
			if term == nil {
				term = cs.LastTerminationState.Terminated
			}
			if term == nil || term.ExitCode == 0 {
				continue
			}
			j.Reason = fmt.Sprintf("Failed: %s (exit %d)", cleantext.Clean(orText(term.Reason, "Error"), 40), term.ExitCode)
			j.Message = term.Message
			break
		}
		j.Message = cleantext.Clean(strings.TrimSpace(j.Message), maxText)
		return j
	case corev1.PodSucceeded:
		return PodJudgement{Why: fmt.Sprintf("%s (%s)", p.Status.Phase, cleantext.Clean(p.Status.Reason, 40))}
	}
	for _, c := range statuses {
		w := c.State.Waiting
		if w == nil || w.Reason == "" || w.Reason == "PodInitializing" || w.Reason == "ContainerCreating" {
			continue
		}
		j := PodJudgement{CannotRun: true, Reason: cleantext.Clean(w.Reason, 40), Message: w.Message}
		j.Why = fmt.Sprintf("container %s %s", cleantext.Clean(c.Name, 63), j.Reason)
		if t := c.LastTerminationState.Terminated; t != nil {
			j.Why += fmt.Sprintf(" (restarted %d times, last exit %d: %s)", c.RestartCount, t.ExitCode, cleantext.Clean(t.Reason, 40))
			if t.Message != "" {
				// A crash loop's own words are its last termination's.
				j.Message = t.Message
			}
		} else if w.Message != "" {
			j.Why += ": " + cleantext.Clean(w.Message, 120)
		}
		j.Message = cleantext.Clean(strings.TrimSpace(j.Message), maxText)
		return j
	}
	if PodReady(p) {
		return PodJudgement{}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			j := PodJudgement{Why: fmt.Sprintf("Pending, %s: %s", cleantext.Clean(c.Reason, 40), cleantext.Clean(c.Message, 120)),
				CannotRun: c.Reason == corev1.PodReasonUnschedulable}
			if j.CannotRun {
				j.Reason, j.Message = corev1.PodReasonUnschedulable, cleantext.Clean(strings.TrimSpace(c.Message), maxText)
			}
			return j
		}
	}
	if p.Spec.NodeName == "" {
		return PodJudgement{Why: "Pending, not scheduled to a node"}
	}
	if p.Status.Phase == corev1.PodPending || p.Status.Phase == "" {
		return PodJudgement{Why: "Pending on node " + cleantext.Clean(p.Spec.NodeName, 253) + ", no container started (no status from its kubelet)"}
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready {
			return PodJudgement{Why: fmt.Sprintf("%s, container %s not ready (readiness probe)", cleantext.Clean(string(p.Status.Phase), 40), cleantext.Clean(c.Name, 63))}
		}
	}
	return PodJudgement{Why: cleantext.Clean(string(p.Status.Phase), 40) + ", not ready"}
}

// PodReady is true when p's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
