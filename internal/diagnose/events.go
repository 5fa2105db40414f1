/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// warningEvents returns the newest Warning events about obj from one of
// the components named (all when none is), newest first, as "reason:
// message (component, ×count)". Naming the owner's components keeps other
// controllers' warnings about the object (the API server's own repair loops,
// say) from being read as the owner's complaint.
func (e *Explainer) warningEvents(ctx context.Context, obj metav1.Object, max int, components ...string) []string {
	all, err := e.c.WarningEvents(ctx, obj.GetNamespace())
	if err != nil {
		return nil
	}
	var evs []corev1.Event
	for _, ev := range all {
		if ev.InvolvedObject.UID == obj.GetUID() {
			evs = append(evs, ev)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(&evs[i]).After(eventTime(&evs[j])) })
	var out []string
	for i := range evs {
		if len(out) == max {
			break
		}
		ev := &evs[i]
		from := ev.Source.Component
		if from == "" {
			from = ev.ReportingController
		}
		if len(components) > 0 && !slices.Contains(components, from) {
			continue
		}
		s := fmt.Sprintf("%s: %s", ev.Reason, strings.TrimSpace(ev.Message))
		if from != "" {
			s += " (" + from
			if ev.Count > 1 {
				s += fmt.Sprintf(", ×%d", ev.Count)
			}
			s += ")"
		}
		out = append(out, s)
	}
	return out
}
