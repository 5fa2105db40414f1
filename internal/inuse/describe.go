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

// Audience says which objects a description may name: those of the
// namespaces MayName allows; the others it counts, "2 pods " + Elsewhere().
// The controller's unused step passes steps.Audience (who reads the
// message on the target); kubectl teardown plan, which shows only what its
// user listed, names everything (Describe).
type Audience interface {
	MayName(namespace string) bool
	Elsewhere() string
}

// everyone names every object.
type everyone struct{}

func (everyone) MayName(string) bool { return true }
func (everyone) Elsewhere() string   { return "" }

// Describe is DescribeFor a reader who may see every pod and binding in
// use: kubectl teardown plan's user, who listed them.
func Describe(kind string, use *Use) string { return DescribeFor(kind, use, everyone{}) }

// DescribeFor says who holds an object of kind, for a person of audience
// a: the pods a may see grouped by the controller that owns them, the
// largest groups first, at most a few named, such as "2 pods of DaemonSet
// agents/node-agent still run as this ServiceAccount (1 terminating)"; the
// pods of namespaces a may not see are only counted ("and 2 pods outside
// namespace web"), and so are the bindings a role is granted through. The
// controller's unused step writes it as its pending message and kubectl
// teardown plan prints it (Describe), so both say the same words about the
// same use.
func DescribeFor(kind string, use *Use, a Audience) string {
	type group struct {
		name  string
		pods  int
		first string // the pod's name, for a pod without a controller
	}
	var groups []*group
	byName := map[string]*group{}
	terminating, hidden := 0, 0
	for _, p := range use.Pods {
		if p.Deleting {
			terminating++
		}
		if !a.MayName(p.Namespace) {
			hidden++
			continue
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
	if hidden > 0 {
		parts = append(parts, fmt.Sprintf("%d %s %s", hidden, plural(hidden > 1, "pod", "pods"), a.Elsewhere()))
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
		if through := throughFor(use, a); through != "" {
			what += " (through " + through + ")"
		}
	}
	msg := who + " still " + what
	if terminating > 0 {
		msg += fmt.Sprintf(" (%d terminating)", terminating)
	}
	return msg
}

// throughFor names the bindings of use.Through a may see, and counts the
// others. A binding whose namespace is not known counts as cluster-scoped.
func throughFor(use *Use, a Audience) string {
	var named []string
	hidden := 0
	for _, b := range use.Through {
		if a.MayName(use.GrantedIn[b]) {
			named = append(named, b)
		} else {
			hidden++
		}
	}
	out := summarize(named)
	if hidden > 0 {
		counted := fmt.Sprintf("%d %s %s", hidden, plural(hidden > 1, "binding", "bindings"), a.Elsewhere())
		out = joinAnd(slices.DeleteFunc([]string{out, counted}, func(s string) bool { return s == "" }))
	}
	return out
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
