/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"fmt"
	"slices"
	"strings"
)

// Describe says who holds an object of kind, for a person: the pods grouped
// by the controller that owns them, the largest groups first, at most a few
// named, such as "2 pods of DaemonSet agents/node-agent still run as this
// ServiceAccount (1 terminating)". The controller's unused step writes it as
// its pending message and kubectl teardown plan prints it, so both say the
// same words about the same use.
func Describe(kind string, use *Use) string {
	type group struct {
		name  string
		pods  int
		first string // the pod's name, for a pod without a controller
	}
	var groups []*group
	byName := map[string]*group{}
	terminating := 0
	for _, p := range use.Pods {
		if p.Deleting {
			terminating++
		}
		name := "pod " + p.Namespace + "/" + p.Name
		if p.OwnerKind != "" {
			name = p.OwnerKind + " " + p.Namespace + "/" + p.OwnerName
		}
		g := byName[name]
		if g == nil {
			g = &group{name: name, first: "pod " + p.Namespace + "/" + p.Name}
			byName[name] = g
			groups = append(groups, g)
		}
		g.pods++
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return b.pods - a.pods })
	const shown = 3
	var parts []string
	for i, g := range groups {
		if i == shown {
			rest := 0
			for _, g := range groups[shown:] {
				rest += g.pods
			}
			parts = append(parts, fmt.Sprintf("%d more %s", rest, plural(rest > 1, "pod", "pods")))
			break
		}
		switch {
		case g.name == g.first:
			parts = append(parts, g.name)
		case g.pods == 1:
			parts = append(parts, g.first+" of "+g.name)
		default:
			parts = append(parts, fmt.Sprintf("%d pods of %s", g.pods, g.name))
		}
	}
	who := joinAnd(parts)
	many := len(use.Pods) > 1
	var what string
	switch kind {
	case "ServiceAccount":
		what = plural(many, "runs", "run") + " as this ServiceAccount"
	case "Secret", "ConfigMap":
		what = plural(many, "uses", "use") + " this " + kind
	case "RoleBinding", "ClusterRoleBinding":
		what = plural(many, "runs", "run") + " as a subject of this " + kind
	default: // Role, ClusterRole
		what = plural(many, "runs", "run") + " with this " + kind + "'s rights"
		if len(use.Through) > 0 {
			what += " (through " + summarize(use.Through) + ")"
		}
	}
	msg := who + " still " + what
	if terminating > 0 {
		msg += fmt.Sprintf(" (%d terminating)", terminating)
	}
	return msg
}

func plural(many bool, one, more string) string {
	if many {
		return more
	}
	return one
}

// joinAnd joins "a", "b and c".
func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// summarize lists a few names, enough for a person to know where to look
// (the same words as the controller's other pending messages).
func summarize(names []string) string {
	const shown = 3
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}
