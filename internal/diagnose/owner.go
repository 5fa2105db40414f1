/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// Causes of this family (see report.go).
const (
	CauseOwnerInTerminatingNamespace = "OwnerInTerminatingNamespace" // A8
	CauseOwnerGone                   = "FinalizerOwnerGone"          // B1
	CauseCleanupInProgress           = "CleanupInProgress"           // B2
	CauseOrphanFinalizer             = "OrphanFinalizer"             // B5
	CauseOwnerUnknown                = "FinalizerOwnerUnknown"       // B1/B5 undecided
)

// ownedFinalizer handles finalizers owned by a controller: find the owner,
// judge whether it is alive, and whether it may remove the finalizer.
func (e *Explainer) ownedFinalizer(ctx context.Context, fd *Finding, s subject) {
	e.ownerFinding(ctx, fd, s)
	e.ownerRBAC(ctx, fd, s.GVR, s.Obj)
}

// ownerFinding finds the owner and judges whether it is alive (B1, B2,
// B5, A8).
func (e *Explainer) ownerFinding(ctx context.Context, fd *Finding, s subject) {
	gvk, obj, entry, inCatalog := s.GVK, s.Obj, s.Entry, s.InCatalog
	owner := e.findOwner(ctx, s.GVR, gvk, obj, fd.Finalizer, entry, inCatalog)
	fd.Owner = owner
	progress := ""
	if fd.Progress != nil {
		progress = fmt.Sprintf(" (last progress: %s after %d attempts: %s)", fd.Progress.State, fd.Progress.Attempts, fd.Progress.Message)
	}
	switch {
	case owner.Source == SourceNone:
		fd.Cause, fd.Catalog = CauseOrphanFinalizer, "B5"
		fd.Message = fmt.Sprintf("nothing owns %q: no catalog entry, no Teardown policy, no CRD or APIService group for its domain, and it was added by %s", fd.Finalizer, managerOrUnknown(owner.Manager))
		fd.FixOwner = "whoever added it"
		fd.Remedy = fmt.Sprintf("remove it with evidence recorded: kubectl teardown release %s --finalizer %s --reason '...'", TargetArg(*fd.Object), fd.Finalizer)
		fd.Leaks = "nothing known: no controller was going to act on it"
	case owner.State == OwnerDown || owner.State == OwnerMissing:
		if home, evidence := e.operatorHome(ctx, owner, entry); home != "" {
			e.operatorInNamespace(fd, owner, home, evidence) // operatorns.go
		} else {
			fd.Cause, fd.Catalog = CauseOwnerGone, "B1"
			fd.Message = fmt.Sprintf("%s owns %q and %s%s", owner.Component, fd.Finalizer, ownerState(owner), progress)
			fd.FixOwner = "operator or application owner"
			generic := fmt.Sprintf("reinstall or restart %s and let it finalize; release only when it is provably gone and its external cleanup is done or accepted as leaked", owner.Component)
			if scaledToZero(owner) {
				generic = fmt.Sprintf("scale %s back up (kubectl scale -n %s %s/%s --replicas=1) and let it finalize; do not release: it is installed, and its cleanup would be skipped", owner.Workload, owner.Workload.Namespace, strings.ToLower(owner.Workload.Kind), owner.Workload.Name)
			}
			if installedButUnhealthy(owner) {
				generic = fmt.Sprintf("reinstall or restart %s so that %s becomes ready (its pods' status and events say why it is not), and let it finalize; do not release: it is installed, and its cleanup would be skipped", owner.Component, owner.Workload)
			}
			if fd.Remedy != "" {
				generic += "; or: " + fd.Remedy
			}
			fd.Remedy = generic
		}
		if fd.Leaks == "" {
			fd.Leaks = "whatever " + owner.Component + " cleans up outside this object (unknown to Teardown)"
		}
	case owner.State == OwnerAlive:
		fd.Cause, fd.Catalog = CauseCleanupInProgress, "B2"
		fd.Severity = SeverityWaiting
		if fd.Progress != nil && (fd.Progress.State == record.StateRetry || fd.Progress.DeadlineExceeded) {
			fd.Severity = SeverityBlocker
		}
		fd.Message = fmt.Sprintf("%s owns %q and is running; it removes the finalizer when its cleanup is done%s", owner.Component, fd.Finalizer, progress)
		fd.FixOwner = "application owner / cloud admin"
		if fd.Remedy == "" {
			fd.Remedy = "wait; if it does not progress, read the owner's logs, the object's status and events"
		}
		if fd.Leaks == "" {
			fd.Leaks = "the external resources " + owner.Component + " is cleaning up"
		}
	default:
		fd.Cause, fd.Catalog = CauseOwnerUnknown, "B1"
		if owner.Source == SourceCatalog && entry.BuiltIn {
			fd.Cause, fd.Severity = CauseCleanupInProgress, SeverityWaiting
			fd.Message = fmt.Sprintf("%s owns %q; it runs inside the control plane, whose liveness the API does not show", owner.Component, fd.Finalizer)
			break
		}
		fd.Message = fmt.Sprintf("%s probably owns %q (%s), but no workload running it was found%s", owner.Component, fd.Finalizer, owner.Source, progress)
		fd.FixOwner = "operator owner"
		if fd.Remedy == "" {
			fd.Remedy = fmt.Sprintf("find the controller of %s and check it is running; do not judge it dead from names alone", owner.Component)
		}
	}
	noStripOnAGuess(fd) // remover.go
}

func managerOrUnknown(m string) string {
	if m == "" {
		return "an unknown client"
	}
	return fmt.Sprintf("%q (a generic client, not a controller)", m)
}

// findOwner combines the signals of §3: Teardown policies, the catalog,
// managedFields, CRD and APIService groups; then looks for the workload.
func (e *Explainer) findOwner(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object, fin string, entry Entry, inCatalog bool) *Owner {
	o := e.findOwnerWorkload(ctx, gvr, gvk, obj, fin, entry, inCatalog)
	if o.Confidence == "" {
		// Found by a product-specific check (csi.go) or not at all.
		o.Confidence = ConfidenceUnknown
		if o.Workload != nil {
			o.Confidence = ConfidenceLikely
		}
	}
	return o
}

// findOwnerWorkload is findOwner before its confidence is settled.
func (e *Explainer) findOwnerWorkload(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object, fin string, entry Entry, inCatalog bool) *Owner {
	o := &Owner{Source: SourceNone, State: OwnerUnknown, Manager: finalizerManager(obj, fin)}
	// candidates name the controller that removes the finalizer; the
	// manager that added it is only a fallback, as whoever added it
	// (argocd-server, a Helm client, a webhook) need not remove it.
	var candidates, managers []string
	for _, p := range Policies(ctx, e.c) {
		if p.Finalizer == fin {
			o.Source = SourcePolicy
			o.Component = fmt.Sprintf("Teardown (%s)", p.Ref)
			o.Evidence = append(o.Evidence, fmt.Sprintf("%s declares finalizer %s with steps %v", p.Ref, fin, p.Steps))
			candidates = append(candidates, "teardown-controller", "teardown")
			break
		}
	}
	if o.Source == SourceNone && inCatalog {
		o.Source, o.Component = SourceCatalog, entry.Component
		o.Evidence = append(o.Evidence, "catalog: "+entry.Component)
		candidates = append(candidates, entry.Workloads...)
		if entry.BuiltIn {
			o.Confidence = ConfidenceCertain
			return o
		}
		if narrowed, ok := narrowToWriter(candidates, o.Manager); ok {
			candidates = narrowed
			o.Evidence = append(o.Evidence, fmt.Sprintf("managedFields: of %s's workloads, %q wrote the finalizer", entry.Component, o.Manager))
		}
	}
	if o.Manager != "" && !isGenericManager(o.Manager) {
		if o.Source == SourceNone {
			o.Source, o.Component = SourceManager, o.Manager
		}
		o.Evidence = append(o.Evidence, fmt.Sprintf("managedFields: %q added the finalizer", o.Manager))
		managers = append(managers, o.Manager)
	}
	if d := finalizerDomain(fin); d != "" {
		for _, crd := range e.c.CRDs(ctx) {
			g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			if groupMatchesDomain(g, d) {
				if o.Source == SourceNone {
					o.Source, o.Component = SourceCRDGroup, "the controller of API group "+g
				}
				o.Evidence = append(o.Evidence, fmt.Sprintf("CRD %s is in group %s, matching the finalizer's domain", crd.GetName(), g))
				break
			}
		}
		for _, s := range e.c.APIServices(ctx) {
			g, _, _ := unstructured.NestedString(s.Object, "spec", "group")
			svc, _, _ := unstructured.NestedString(s.Object, "spec", "service", "name")
			if svc != "" && groupMatchesDomain(g, d) {
				if o.Source == SourceNone {
					o.Source, o.Component = SourceAPIService, "the aggregated API server of "+g
				}
				o.Evidence = append(o.Evidence, fmt.Sprintf("APIService %s serves group %s", s.GetName(), g))
				break
			}
		}
	}
	if o.Source == SourceNone {
		// Nothing in the cluster claims it: B5, as certain as the cluster's
		// signals can make it.
		o.Confidence = ConfidenceCertain
		return o
	}
	w, ok, handled := e.csiOwner(ctx, o, gvk, obj, fin)
	if !handled {
		// remover.go: the writer's workload first, then the product's,
		// each judged by what its ServiceAccount may write.
		w, ok = e.pickRemover(ctx, gvr, obj, o, candidates, managers)
	}
	if !ok && o.Source != SourcePolicy && o.Manager != "" && !isGenericManager(o.Manager) {
		w, ok = e.workloadRunning(ctx, gvr, obj, o) // families.go: the remover by what runs
	}
	if ok && o.Source == SourcePolicy {
		o.Confidence = ConfidenceCertain
	}
	candidates = append(candidates, managers...)
	if len(candidates) == 0 {
		return o
	}
	if !ok {
		// A leader-election Lease tells a running controller from a gone one
		// even when its workload is named differently.
		if l, found := e.findLease(ctx, candidates); found {
			o.Workload = &l.Ref
			// A Lease not renewed within its duration has no leader: the
			// same three states as kube-controller-manager's, by the API
			// server's clock.
			serverNow, _ := e.c.ServerNow(e.now)
			age := serverNow.Sub(l.Renewed)
			if age < 0 {
				age = 0
			}
			if l.Renewed.IsZero() || age > l.Duration {
				o.State = OwnerDown
				o.Evidence = append(o.Evidence, fmt.Sprintf("%s (holder %q) was last renewed %s ago, past its %s lease duration: no instance leads", l.Ref, l.Holder, age.Round(time.Second), ShortDuration(l.Duration)))
			} else {
				o.State = OwnerAlive
				o.Evidence = append(o.Evidence, fmt.Sprintf("%s is held by %q, renewed %s ago", l.Ref, l.Holder, age.Round(time.Second)))
			}
			o.Confidence = ConfidenceLikely
			return o
		}
		o.Evidence = append(o.Evidence, fmt.Sprintf("no Deployment, StatefulSet, DaemonSet, pod or Lease named or labelled %s was found", strings.Join(candidates, ", ")))
		if writerDisagrees(o, entry, inCatalog) {
			unknownRemover(o, entry)
			return o
		}
		o.State, o.Confidence = OwnerMissing, ConfidenceLikely
		return o
	}
	o.Workload = &w.Ref
	if w.ServiceAccount != "" {
		o.ServiceAccount = w.Ref.Namespace + "/" + w.ServiceAccount
	}
	switch {
	case w.Deleting:
		o.State = OwnerDown
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s is being deleted", w.Ref))
	case e.c.NamespaceTerminating(ctx, w.Ref.Namespace):
		o.State = OwnerDown
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s lives in namespace %s, which is being deleted", w.Ref, w.Ref.Namespace))
	case w.Ready == 0:
		o.State = OwnerDown
		o.Evidence = append(o.Evidence, e.unhealthy(ctx, w))
	default:
		o.State = OwnerAlive
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s has %d of %d replicas ready", w.Ref, w.Ready, w.Desired))
	}
	return o
}

// finalizerManager returns the managedFields manager that owns the
// finalizer's entry, preferring controllers over generic clients.
func finalizerManager(obj metav1.Object, fin string) string {
	key, _ := json.Marshal(fin)
	needle := fmt.Sprintf(`"v:%s"`, strings.ReplaceAll(string(key), `"`, `\"`))
	var generic string
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 == nil || !strings.Contains(mf.FieldsV1.GetRawString(), needle) {
			continue
		}
		if !isGenericManager(mf.Manager) {
			return mf.Manager
		}
		if generic == "" {
			generic = mf.Manager
		}
	}
	return generic
}

// lastEvidence is the newest evidence about the owner's workload.
func lastEvidence(o *Owner) string {
	for i := len(o.Evidence) - 1; i >= 0; i-- {
		if !strings.HasPrefix(o.Evidence[i], "SubjectAccessReview:") {
			return o.Evidence[i]
		}
	}
	return "no evidence"
}

// ownerGone says whether a finding's owner was found stopped or missing:
// then the owner is the root blocker, and what it would wait on next is a
// warning.
func ownerGone(fd *Finding) bool {
	return fd.Owner != nil && (fd.Owner.State == OwnerDown || fd.Owner.State == OwnerMissing)
}

// builtInOwner is the Owner of a finalizer removed by a controller of
// kube-controller-manager, judged by its Lease.
func (e *Explainer) builtInOwner(ctx context.Context, component string) *Owner {
	state, ev := e.controllerManager(ctx)
	return &Owner{Component: component, Source: SourceCatalog, State: state, Evidence: []string{ev}}
}

// ownersStopped makes sure that no finding waits, as if in progress, on an
// owner found stopped or missing: a finalizer or spec token that only a
// controller that is not running would remove is a blocker, whichever the
// controller (kube-controller-manager's are handled first, with their own
// remedy, by controllerManagerStopped). A built-in finalizer whose check
// named no owner gets the catalog's first, so that kube-controller-manager's
// liveness is read for it too.
func (e *Explainer) ownersStopped(fs []Finding) {
	WalkFindings(fs, func(f *Finding) {
		if f.Severity != SeverityWaiting || f.Finalizer == "" || f.Owner == nil {
			return
		}
		if f.Owner.State != OwnerDown && f.Owner.State != OwnerMissing {
			return
		}
		f.Severity = SeverityBlocker
		f.Message += fmt.Sprintf("; but %s is %s (%s), and nothing else removes %q", orUnknown(f.Owner.Component), f.Owner.State, lastEvidence(f.Owner), f.Finalizer)
		f.FixOwner = "whoever runs " + orUnknown(f.Owner.Component)
		f.Remedy = fmt.Sprintf("bring %s back so it removes the finalizer; release only once its cleanup is done or accepted as leaked", orUnknown(f.Owner.Component))
		noStripOnAGuess(f) // remover.go
	})
}

// builtInOwners names the owner of every built-in finalizer a check left
// without one, from the catalog.
func builtInOwners(fs []Finding) {
	WalkFindings(fs, func(f *Finding) {
		if f.Owner != nil || f.Finalizer == "" || f.Location == "" || f.Object == nil {
			return
		}
		kind := f.Object.Kind
		if f.Location == "spec" {
			kind = "Namespace"
		}
		if entry, ok := lookupCatalog(f.Finalizer, kind); ok && entry.BuiltIn {
			f.Owner = &Owner{Component: entry.Component, Source: SourceCatalog, State: OwnerUnknown}
		}
	})
}
