/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The remover of a finalizer, identified from the cluster rather than from
// product names (issue 20, family 2). A finalizer's name says which product
// it belongs to, not which of the product's controllers, or which of its
// installations, removes it. The cluster records better: managedFields say
// which client wrote the finalizer; a workload whose containers run that
// client (by name, image or command) runs as a ServiceAccount; a
// SubjectAccessReview says whether that ServiceAccount may write the object
// at all. A workload of the same product whose ServiceAccount may write
// such objects in its own namespace but not in the object's is another
// installation, not the remover. How much of this agrees is the owner's
// Confidence, and a remedy offers to remove the finalizer by hand only when
// it is certain.

// Owner confidences.
const (
	// ConfidenceCertain: two independent signals agree on the remover
	// (the client that wrote the finalizer runs in this workload, and its
	// ServiceAccount may write the object), or Teardown or the control
	// plane removes it.
	ConfidenceCertain = "certain"
	// ConfidenceLikely: one signal names the remover (a product's
	// workload, the writer's name, a Lease), nothing contradicts it.
	ConfidenceLikely = "likely"
	// ConfidenceUnknown: the signals disagree or name nothing found.
	ConfidenceUnknown = "unknown"
)

// remover is a workload considered as a finalizer's remover.
type remover struct {
	w workload
	// mayWrite: its ServiceAccount may patch or update the object;
	// checked says the question could be asked.
	mayWrite, checked bool
}

// pickRemover finds the workload that removes the finalizer: among those
// named after its owner (a Teardown policy's controller, the catalog's
// product, narrowed to the writer when managedFields name one of them),
// then among those running the client that wrote it (managers: the only
// names an operator unknown to the catalog has; a product's own writer,
// such as argocd-server adding Argo CD's finalizer, is not its remover).
// It sets o's Confidence and records why a workload was passed over.
func (e *Explainer) pickRemover(ctx context.Context, gvr schema.GroupVersionResource, obj metav1.Object, o *Owner, candidates, managers []string) (workload, bool) {
	r, ok := e.bestRemover(ctx, gvr, obj, o, e.matchingWorkloads(ctx, candidates))
	if !ok && len(managers) > 0 {
		r, ok = e.bestRemover(ctx, gvr, obj, o, e.matchingWorkloads(ctx, managers))
	}
	if !ok {
		return workload{}, false
	}
	o.Confidence = ConfidenceLikely
	writer := o.Manager != "" && !isGenericManager(o.Manager) && (workloadMatches(r.w.Ref.Name, r.w.Labels, []string{o.Manager}) || containsAny(r.w.Containers, []string{o.Manager}))
	if writer && r.checked && r.mayWrite {
		o.Confidence = ConfidenceCertain
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s runs %q, the client that wrote the finalizer, as ServiceAccount %s/%s, which may write %s", r.w.Ref, o.Manager, r.w.Ref.Namespace, r.w.ServiceAccount, resourceName(gvr)))
	}
	return r.w, true
}

// bestRemover keeps the workloads that may be the remover (not another
// installation of the product) and prefers those that may write the object,
// then those with ready replicas.
func (e *Explainer) bestRemover(ctx context.Context, gvr schema.GroupVersionResource, obj metav1.Object, o *Owner, ws []workload) (remover, bool) {
	var kept []remover
	for _, w := range ws {
		r := remover{w: w}
		// status (a Bulk run) leaves the question to explain: its requests
		// must not grow with the objects it lists.
		if w.ServiceAccount != "" && !e.c.IsBulk() {
			r.mayWrite, _, r.checked = e.serviceAccountMay(ctx, w.Ref.Namespace, w.ServiceAccount, gvr, obj.GetNamespace(), obj.GetName(), "patch", "update")
		}
		if r.checked && !r.mayWrite && obj.GetNamespace() != "" && obj.GetNamespace() != w.Ref.Namespace {
			home, _, ok := e.serviceAccountMay(ctx, w.Ref.Namespace, w.ServiceAccount, gvr, w.Ref.Namespace, "", "patch", "update")
			if ok && home {
				o.Evidence = append(o.Evidence, fmt.Sprintf("%s is another installation: its ServiceAccount %s/%s may write %s in namespace %s only, not in %s", w.Ref, w.Ref.Namespace, w.ServiceAccount, resourceName(gvr), w.Ref.Namespace, obj.GetNamespace()))
				continue
			}
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return remover{}, false
	}
	rank := func(r remover) int {
		n := 0
		if r.checked && r.mayWrite {
			n += 2
		}
		if r.w.Ready > 0 {
			n++
		}
		return n
	}
	best := kept[0]
	for _, r := range kept[1:] {
		if rank(r) > rank(best) {
			best = r
		}
	}
	return best, true
}

// narrowToWriter keeps, of a product's workload names, the one that wrote
// the finalizer, when managedFields name one of them: Flux's finalizer is
// the same on every kind, but only helm-controller removes it from a
// HelmRelease.
func narrowToWriter(candidates []string, manager string) ([]string, bool) {
	if manager == "" || isGenericManager(manager) || !slices.Contains(candidates, manager) || len(candidates) == 1 {
		return candidates, false
	}
	return []string{manager}, true
}

// writerDisagrees says whether managedFields name a controller that the
// catalog's product does not run: the finalizer is then written (and
// perhaps removed) by something the product's names do not describe, such
// as a controller embedded in a distribution's server process.
func writerDisagrees(o *Owner, entry Entry, inCatalog bool) bool {
	return inCatalog && o.Source == SourceCatalog && o.Manager != "" && !isGenericManager(o.Manager) && !slices.Contains(entry.Workloads, o.Manager)
}

// unknownRemover makes o an owner the cluster does not identify: the
// product's names and managedFields disagree, and no workload was found.
func unknownRemover(o *Owner, entry Entry) {
	o.State, o.Confidence = OwnerUnknown, ConfidenceUnknown
	o.Evidence = append(o.Evidence, fmt.Sprintf("managedFields: %q wrote the finalizer, which is none of %s's workloads (%s), and no workload runs it: the remover may run outside the cluster's workloads (a server process, such as a controller embedded in the distribution, or another cluster), whose liveness the API does not show",
		o.Manager, entry.Component, orUnknown(strings.Join(entry.Workloads, ", "))))
}

// noStripOnAGuess rewrites a remedy that would remove a finalizer by hand
// when its remover is not identified for certain: the owner may be alive
// elsewhere, and its cleanup would be skipped.
func noStripOnAGuess(fd *Finding) {
	if fd.Owner == nil || fd.Owner.Confidence == ConfidenceCertain || fd.Owner.Confidence == "" {
		return
	}
	var keep []string
	dropped := false
	for _, part := range strings.Split(fd.Remedy, "; ") {
		low := strings.ToLower(part)
		warns := strings.HasPrefix(low, "do not") || strings.HasPrefix(low, "never")
		if !warns && (strings.Contains(low, "release") || strings.Contains(low, "strip") || strings.Contains(low, "remove it")) {
			dropped = true
			continue
		}
		keep = append(keep, part)
	}
	if !dropped {
		return
	}
	keep = append(keep, fmt.Sprintf("do not remove the finalizer by hand: its remover is identified as %s only with %s confidence (%s), and may still be running elsewhere", orUnknown(fd.Owner.Component), fd.Owner.Confidence, lastEvidence(fd.Owner)))
	fd.Remedy = strings.Join(keep, "; ")
}
