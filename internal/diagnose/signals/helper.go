/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"fmt"
	"regexp"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

// Family 5: a helper's failure followed to its cause. Owners delegate work
// to pods and Jobs they create (a provisioner's helper pod that removes a
// volume's data, an operator's cleanup Job), and their own words only say
// that it failed or timed out. Read the helper: its phase, why it is not
// scheduled or not running, its container's termination message, and, when
// that says it was forbidden, the access question to ask about its
// ServiceAccount (a SubjectAccessReview the engine sends).

// helperRE finds "pod NAME", `pods "NAME"`, "pod/NAME", "Job ns/NAME",
// `jobs.batch "NAME"` in an owner's words.
var helperRE = regexp.MustCompile(`(?i)\b(pods?|jobs?(?:\.batch)?)(?:\s+|/|\s*")"?([a-z0-9][-a-z0-9.]*/)?([a-z0-9][-a-z0-9.]*[a-z0-9])"?`)

// HelperRefs finds the pods and Jobs text names, in namespace unless the
// text says another ("ns/name"). A name must look like a generated one (a
// dash or a digit), so that "pod is pending" names nothing.
func HelperRefs(text, namespace string) []Ref {
	var out []Ref
	seen := map[Ref]bool{}
	for _, m := range helperRE.FindAllStringSubmatch(text, -1) {
		name := m[3]
		if !strings.ContainsAny(name, "-0123456789") {
			continue
		}
		kind := "Pod"
		apiVersion := "v1"
		if strings.HasPrefix(strings.ToLower(m[1]), "job") {
			kind, apiVersion = "Job", "batch/v1"
		}
		ns := namespace
		if m[2] != "" {
			ns = strings.TrimSuffix(m[2], "/")
		}
		r := Ref{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// HelperFailure is why a helper did not do its work.
type HelperFailure struct {
	Helper Ref
	// Reason is short: "Failed: Error (exit 1)", "Unschedulable",
	// "BackoffLimitExceeded", "ImagePullBackOff".
	Reason string
	// Message is the helper's own words (termination message, scheduler
	// or Job condition message), cleaned and bounded.
	Message string
	// ServiceAccount the helper's pods run as ("namespace/name").
	ServiceAccount string
	// Access is the question its words say was refused, to ask with a
	// SubjectAccessReview; nil when none.
	Access *AccessQuestion
}

// String is "Pod ns/name: Failed: Error (exit 1): rm: can't remove ...".
func (h HelperFailure) String() string {
	s := h.Helper.String() + ": " + h.Reason
	if h.Message != "" {
		s += ": " + h.Message
	}
	return s
}

// PodFailure reads why a helper pod failed, from the engine's one reading
// of a pod (JudgePod): Failed with its container's termination (reason,
// exit code, message), evicted, unschedulable, or a container that cannot
// start. A pod that runs, starts, succeeded or is being deleted has no
// failure.
func PodFailure(pod *corev1.Pod) (HelperFailure, bool) {
	j := JudgePod(pod)
	if !j.Failed && !j.CannotRun {
		return HelperFailure{}, false
	}
	return HelperFailure{
		Helper:         Ref{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name},
		ServiceAccount: pod.Namespace + "/" + orDefault(pod.Spec.ServiceAccountName),
		Reason:         j.Reason,
		Message:        j.Message,
		Access:         ForbiddenIn(j.Message),
	}, true
}

// JobFailure reads why a helper Job failed: its Failed condition, made
// precise by the failure of one of its pods (those given whose job-name
// label is the Job's). A Job whose pods fail while it still retries fails
// too: its newest failed pod says why.
func JobFailure(job *batchv1.Job, pods []*corev1.Pod) (HelperFailure, bool) {
	h := HelperFailure{
		Helper:         Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: job.Namespace, Name: job.Name},
		ServiceAccount: job.Namespace + "/" + orDefault(job.Spec.Template.Spec.ServiceAccountName),
	}
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			h.Reason, h.Message = cleantext.Clean(orText(c.Reason, "Failed"), 40), c.Message
		}
	}
	var newest *corev1.Pod
	var podFailure HelperFailure
	for _, p := range pods {
		if p.Namespace != job.Namespace || p.Labels[batchv1.JobNameLabel] != job.Name && p.Labels["job-name"] != job.Name {
			continue
		}
		if f, ok := PodFailure(p); ok && (newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time)) {
			newest, podFailure = p, f
		}
	}
	if newest != nil {
		if h.Reason == "" {
			h.Reason = "pods failing"
		}
		h.Reason += "; its " + podFailure.Helper.String() + ": " + podFailure.Reason
		if podFailure.Message != "" {
			h.Message = podFailure.Message
		}
	}
	if h.Reason == "" {
		return HelperFailure{}, false
	}
	h.Message = cleantext.Clean(strings.TrimSpace(h.Message), maxText)
	h.Access = ForbiddenIn(h.Message)
	return h, true
}

// AccessQuestion is what a Forbidden error says was refused.
type AccessQuestion struct {
	// Namespace and ServiceAccount of the identity refused.
	Namespace, ServiceAccount string
	Verb, Resource, Group     string
	// In is the namespace the request was in ("" at the cluster scope).
	In string
}

// String is "may system:serviceaccount:ns:sa patch pods in namespace x".
func (a AccessQuestion) String() string {
	res := a.Resource
	if a.Group != "" {
		res += "." + a.Group
	}
	where := "at the cluster scope"
	if a.In != "" {
		where = "in namespace " + a.In
	}
	return fmt.Sprintf("may system:serviceaccount:%s:%s %s %s %s", a.Namespace, a.ServiceAccount, a.Verb, res, where)
}

var forbiddenRE = regexp.MustCompile(`User "system:serviceaccount:([^:"]+):([^"]+)" cannot (\w+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)")?`)

// ForbiddenIn parses the API server's Forbidden message from text: the
// ServiceAccount, verb, resource, group and namespace refused.
func ForbiddenIn(text string) *AccessQuestion {
	m := forbiddenRE.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	return &AccessQuestion{Namespace: m[1], ServiceAccount: m[2], Verb: m[3], Resource: m[4], Group: m[5], In: m[6]}
}

func orDefault(sa string) string { return orText(sa, "default") }

func orText(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
