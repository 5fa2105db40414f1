/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Namespace deletion condition types and reasons, written by the namespace
// controller (pkg/controller/namespace/deletion/status_condition_utils.go).
const (
	condDiscoveryFailure    = "NamespaceDeletionDiscoveryFailure"
	condGVParsingFailure    = "NamespaceDeletionGroupVersionParsingFailure"
	condContentFailure      = "NamespaceDeletionContentFailure"
	condContentRemaining    = "NamespaceContentRemaining"
	condFinalizersRemaining = "NamespaceFinalizersRemaining"
)

var (
	// A group/version with a dotted group: metrics.example.com/v1beta1.
	groupVersionRE = regexp.MustCompile(`\b([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+/v[0-9]+[a-z0-9]*)\b`)
	// "configmaps. has 2 resource instances", "widgets.example.com has 1 resource instances".
	remainingRE = regexp.MustCompile(`([a-z0-9-]+)\.([a-z0-9.-]*) has ([0-9]+) resource instances`)
	// "example.com/cleanup in 3 resource instances".
	finalizerCountRE = regexp.MustCompile(`([^\s,:]+) in ([0-9]+) resource instances`)
	webhookNameRE    = regexp.MustCompile(`(?:failed calling webhook|admission webhook) "([^"]+)"`)
)

// parseDiscoveryFailure returns the group/versions named in a
// NamespaceDeletionDiscoveryFailure message, in both the
// "unable to handle the request" and the "stale GroupVersion discovery"
// dialects.
func parseDiscoveryFailure(msg string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range groupVersionRE.FindAllStringSubmatch(msg, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// RemainingResource is one "<resource>.<group> has N resource instances".
type RemainingResource struct {
	Resource string `json:"resource"`
	Group    string `json:"group"`
	Count    int    `json:"count"`
}

// parseContentRemaining parses a NamespaceContentRemaining message.
func parseContentRemaining(msg string) []RemainingResource {
	var out []RemainingResource
	for _, m := range remainingRE.FindAllStringSubmatch(msg, -1) {
		n, _ := strconv.Atoi(m[3])
		out = append(out, RemainingResource{Resource: m[1], Group: m[2], Count: n})
	}
	return out
}

// parseFinalizersRemaining parses a NamespaceFinalizersRemaining message in
// the current ("Some content in the namespace has finalizers remaining: …")
// and the older ("Some finalizers are remaining: …") dialect.
func parseFinalizersRemaining(msg string) map[string]int {
	i := strings.Index(msg, ":")
	if i < 0 {
		return nil
	}
	out := map[string]int{}
	for _, m := range finalizerCountRE.FindAllStringSubmatch(msg[i+1:], -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] += n
	}
	return out
}

// parseWebhookNames returns the admission webhooks named in an error message.
func parseWebhookNames(msg string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range webhookNameRE.FindAllStringSubmatch(msg, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}
