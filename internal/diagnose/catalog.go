/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/signals"
)

// Strip risk of removing a finalizer by hand.
const (
	StripForbidden = "forbidden" // refused without --force (CRD cleanup, namespace kubernetes)
	StripRisky     = "risky"     // leaks something outside the API or skips real cleanup
	StripLowRisk   = "low-risk"  // only bookkeeping is skipped
)

// Entry describes a well-known finalizer: who adds and removes it, what
// removing it by hand costs, and the check that explains it on a
// terminating object. Keyed by finalizer (exact or prefix) and, when the
// same key means different things on different kinds, by kind. Adding a
// cause is one Entry in its family's file (and, for a new family, its list
// in finalizerCatalog) plus its check in the same file; docs/diagnose.md
// walks through it.
type Entry struct {
	Finalizer string
	// Prefix matches every finalizer starting with Finalizer.
	Prefix bool
	// Kinds restricts the entry; empty means any kind.
	Kinds []string
	// Component is who removes it.
	Component string
	// Workloads are Deployment/StatefulSet/DaemonSet names or
	// app.kubernetes.io/name labels the owner runs as.
	Workloads []string
	// BuiltIn is true for finalizers removed by kube-apiserver or
	// kube-controller-manager, whose liveness the API rarely shows.
	BuiltIn bool
	// ID is the row of research/stuck-termination.md §2 (A1…F1; "B" for a
	// third-party owner), reported as a Finding's catalog. An entry
	// without one carries only a Check, and never the texts.
	ID     string
	Remedy string
	Leaks  string
	Strip  string
	// Resources restricts Check to these resources (resource.group; core
	// resources bare), as the same kind name can be served by another
	// group; empty means any.
	Resources []string
	// Check explains the finalizer; nil finds its owner and judges whether
	// it is alive (ownedFinalizer). Wrap with ownedThen to do both.
	Check check
}

// check explains one finalizer of a terminating object into fd, which
// arrives with the catalog's texts, the object and its progress record.
type check func(e *Explainer, ctx context.Context, fd *Finding, s subject)

// subject is the finalizer a check explains, and where it sits.
type subject struct {
	GVR schema.GroupVersionResource
	GVK schema.GroupVersionKind
	Obj metav1.Object
	// Index is the finalizer's position in metadata.finalizers.
	Index int
	// Depth counts the chain above the object.
	Depth int
	// Entry is the catalog's entry for the finalizer, when InCatalog.
	Entry     Entry
	InCatalog bool
}

// ownedThen is a check that first finds the owner (ownedFinalizer), then
// runs next with what it found. The owner's RBAC is checked last, so that a
// missing permission is reported beside what next finds, never instead.
func ownedThen(next check) check {
	return func(e *Explainer, ctx context.Context, fd *Finding, s subject) {
		e.ownerFinding(ctx, fd, s)
		next(e, ctx, fd, s)
		e.ownerRBAC(ctx, fd, s.GVR, s.Obj)
	}
}

// finalizerCatalog is research/stuck-termination.md §3, by family: each
// family's file holds its entries and their checks. It is assembled in
// init because checks reach lookupCatalog again (chains), which a package
// variable's initializer may not.
var finalizerCatalog []Entry

func init() {
	finalizerCatalog = slices.Concat(namespaceEntries, gcEntries, volumesEntries, crdEntries, podsEntries,
		nodesEntries, networkEntries, draEntries, thirdpartyEntries, crossplaneEntries)
}

// lookupCatalog finds the entry for finalizer on kind; exact matches win over
// prefixes, kind-specific entries over generic ones. Entries without an ID
// only carry checks and are not returned.
func lookupCatalog(finalizerName, kind string) (Entry, bool) {
	best, bestScore := Entry{}, -1
	for _, e := range finalizerCatalog {
		if e.ID == "" {
			continue
		}
		if score := matchScore(e, finalizerName, kind); score > bestScore {
			best, bestScore = e, score
		}
	}
	return best, bestScore >= 0
}

// matchScore ranks how well e matches: exact 2, prefix 1, a catch-all
// (empty prefix) 0, plus 4 for a kind-specific entry; -1 when it does not
// match.
func matchScore(e Entry, finalizerName, kind string) int {
	score := 0
	switch {
	case e.Prefix && e.Finalizer == "":
		// A catch-all ranks below every finalizer-specific entry, even a
		// generic one (foregroundDeletion on a Node is the garbage
		// collector's).
		if len(e.Kinds) > 0 && !slices.Contains(e.Kinds, kind) {
			return -1
		}
		return 0
	case !e.Prefix && e.Finalizer == finalizerName:
		score = 2
	case e.Prefix && strings.HasPrefix(finalizerName, e.Finalizer):
		score = 1
	default:
		return -1
	}
	if len(e.Kinds) > 0 {
		if !slices.Contains(e.Kinds, kind) {
			return -1
		}
		score += 4
	}
	return score
}

// lookupCheck finds the check for finalizer on an object of gvr and kind:
// that of the best-matching entry with a check that applies to gvr; nil
// when none does (ownedFinalizer then explains it).
func lookupCheck(finalizerName string, gvr schema.GroupVersionResource, kind string) check {
	var best check
	bestScore := -1
	for _, e := range finalizerCatalog {
		if e.Check == nil || (len(e.Resources) > 0 && !slices.Contains(e.Resources, resourceName(gvr))) {
			continue
		}
		if score := matchScore(e, finalizerName, kind); score > bestScore {
			best, bestScore = e.Check, score
		}
	}
	return best
}

// finalizerDomain returns the domain part of a domain-qualified finalizer,
// "" otherwise.
func finalizerDomain(f string) string {
	i := strings.Index(f, "/")
	if i <= 0 {
		return ""
	}
	d := f[:i]
	if !strings.Contains(d, ".") {
		return ""
	}
	return d
}

// groupMatchesDomain says whether an API group and a finalizer domain belong
// together: equal, or the domain a subdomain of the group
// (cleanup.widgets.io for widgets.io). A group below the domain does not
// match: example.com/x says nothing about metrics.example.com.
func groupMatchesDomain(group, domain string) bool {
	if group == "" || domain == "" {
		return false
	}
	return group == domain || strings.HasSuffix(domain, "."+group)
}

// isGenericManager: a field manager of people and generic tools adds
// finalizers but never removes them on its own (signals.GenericManager).
func isGenericManager(m string) bool { return signals.GenericManager(m) }
