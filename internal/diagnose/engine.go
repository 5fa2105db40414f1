/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

const (
	// maxDepth bounds chains (foreground owners, CRDs, namespaces).
	maxDepth = 6
	// maxChildren bounds the objects explained in detail under one node.
	maxChildren = 25
	// DefaultGCStallAfter is how long a GC finalizer may sit with nothing left to wait
	// on before explain calls the garbage collector stuck (E2), unless
	// explain --gc-stall-after says otherwise; other built-in controllers
	// are judged with it too.
	DefaultGCStallAfter = 2 * time.Minute
)

// Explainer walks the catalog of causes for one target at a time. It only
// reads, and issues server-side dry-runs; it never writes. Explainers of
// one run share their Cluster, and with it every list read.
type Explainer struct {
	c   *kube.Cluster
	now time.Time
	// gcStallAfter is how long the garbage collector may leave a
	// foregroundDeletion or orphan finalizer with nothing left to do, or a
	// foreground owner's blocking dependents undeleted, before E2.
	gcStallAfter time.Duration
	// skipDryRun leaves out B3 (WithoutRemovalDryRun).
	skipDryRun bool
	// skipFamilies leaves out issue 26's family questions (families.go):
	// the benchmark's same-run baseline only.
	skipFamilies bool

	mu      sync.Mutex
	visited map[types.UID]bool
}

// NewExplainer explains with c's caches, judging ages against now.
func NewExplainer(c *kube.Cluster, now time.Time) *Explainer {
	return &Explainer{c: c, now: now, visited: map[types.UID]bool{}, gcStallAfter: DefaultGCStallAfter}
}

// WithoutRemovalDryRun skips B3, the server-side dry-run of each
// finalizer's removal: one request per finalizer, which status, explaining
// a whole cluster, leaves to explain.
func (e *Explainer) WithoutRemovalDryRun() *Explainer {
	e.skipDryRun = true
	return e
}

// WithGCStallAfter sets how long the garbage collector may leave a
// foregroundDeletion or orphan finalizer with nothing to do, or a
// foreground owner's dependents undeleted, before it is reported as not
// progressing (E2).
func (e *Explainer) WithGCStallAfter(d time.Duration) *Explainer {
	e.gcStallAfter = d
	return e
}

// Target is the object to explain.
type Target struct {
	GVR        schema.GroupVersionResource
	GVK        schema.GroupVersionKind
	Namespaced bool
	Namespace  string
	Name       string
}

// Ref names the target.
func (t Target) Ref() ObjectRef {
	return ObjectRef{APIVersion: t.GVK.GroupVersion().String(), Kind: t.GVK.Kind, Resource: t.GVR.Resource, Namespace: t.Namespace, Name: t.Name}
}

// IsNamespace is true for a Namespace.
func (t Target) IsNamespace() bool { return t.GVR.Group == "" && t.GVR.Resource == "namespaces" }

// Explain reads t and builds its report. For a target that does not exist
// it returns the NotFound error together with a report of what the cluster
// remembers of it (Events, its namespace).
func (e *Explainer) Explain(ctx context.Context, t Target) (*Report, error) {
	obj, err := e.c.GetObject(ctx, t.GVR, t.Namespace, t.Name)
	if apierrors.IsNotFound(err) && t.IsNamespace() {
		// A12: a namespace finalized too early leaves its content behind.
		return e.deletedNamespace(ctx, t, err)
	}
	if apierrors.IsNotFound(err) {
		// What the cluster remembers of it, with the error (vanished.go).
		return e.vanished(ctx, t), err
	}
	if rep := e.corruptTarget(t, err); rep != nil {
		return rep, nil // corrupt.go
	}
	if err != nil {
		// Any other failure is a finding, never the end (unreadable.go).
		return e.unreadableTarget(ctx, t, err), nil
	}
	return e.report(ctx, t, obj), nil
}

// ExplainObject builds the report for t from obj, as the caller read it
// (status: its metadata from a list), without reading it again unless its
// checks need the whole object (a Namespace's spec, a CRD's names).
func (e *Explainer) ExplainObject(ctx context.Context, t Target, obj metav1.Object) (*Report, error) {
	crd := t.GVR.Group == kube.GVRCRD.Group && t.GVR.Resource == kube.GVRCRD.Resource
	if _, full := obj.(*unstructured.Unstructured); !full && (t.IsNamespace() || crd) {
		return e.Explain(ctx, t)
	}
	return e.report(ctx, t, obj), nil
}

// report explains obj, t as read.
func (e *Explainer) report(ctx context.Context, t Target, obj metav1.Object) *Report {
	rep := &Report{APIVersion: ReportAPIVersion, Kind: "ExplainReport", Target: t.Ref()}
	rep.Target.UID = string(obj.GetUID())
	rep.Finalizers = append(rep.Finalizers, obj.GetFinalizers()...)
	if dts := obj.GetDeletionTimestamp(); dts != nil {
		rep.Terminating = true
		rep.DeletionTimestamp = dts
		rep.TerminatingFor = Age(e.now.Sub(dts.Time))
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && t.IsNamespace() {
		specFins, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "finalizers")
		for _, f := range specFins {
			rep.Finalizers = append(rep.Finalizers, "spec:"+f)
		}
		rep.Findings = e.namespaceFindings(ctx, u)
	} else {
		rep.Findings = e.objectFindings(ctx, t.GVR, t.GVK, obj, 0)
		rep.Findings = append(rep.Findings, e.ownerRefFindings(ctx, t, obj)...)
	}
	rep.Findings = append(rep.Findings, e.refusedFindings(ctx, t)...)             // refused.go
	rep.Findings = append(rep.Findings, e.cycleFindings(ctx, t, rep.Findings)...) // waitcycle.go
	builtInOwners(rep.Findings)
	if deletionPending(rep) && e.usesControllerManager(rep.Findings) {
		kcm := e.kcmLiveness(ctx)
		e.controllerManagerStopped(rep.Findings, kcm)
		rep.Controllers = append(rep.Controllers, kcm)
	}
	if deletionPending(rep) {
		e.ownersStopped(rep.Findings)
	}
	rep.RootBlockers = rankRoots(MarkRoots(rep.Findings)) // waiting.go
	rep.Blocked = len(rep.RootBlockers) > 0
	e.judgeProgress(ctx, t, obj, rep) // verdict.go: after every pass
	return rep
}

func refOf(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object) ObjectRef {
	return ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Resource: gvr.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID())}
}

// objectFindings explains one object: each of its finalizers, and the pod
// checks for pods. depth counts the chain above it.
func (e *Explainer) objectFindings(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object, depth int) []Finding {
	if obj.GetDeletionTimestamp() == nil {
		out := []Finding{e.notTerminating(ctx, gvr, gvk, obj, depth)}
		if gvr.Group == "" && gvr.Resource == "pods" && depth == 0 {
			if f, ok := e.evictionFinding(ctx, obj); ok { // evictions.go
				out = append(out, f)
			}
		}
		return out
	}
	e.mu.Lock()
	seen := e.visited[obj.GetUID()]
	e.visited[obj.GetUID()] = true
	e.mu.Unlock()
	if seen || depth > maxDepth {
		return []Finding{{Cause: "SeeAbove", Severity: SeverityInfo, Object: refPtr(refOf(gvr, gvk, obj)), Message: "already explained above (cycle or depth limit)"}}
	}
	var out []Finding
	if gvr.Group == "" && gvr.Resource == "pods" {
		out = append(out, e.podFindings(ctx, obj)...)
	}
	for i, f := range obj.GetFinalizers() {
		out = append(out, e.finalizerFinding(ctx, gvr, gvk, obj, i, f, depth))
	}
	return out
}

// finalizerFinding explains one metadata finalizer of a terminating object.
func (e *Explainer) finalizerFinding(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object, index int, fin string, depth int) Finding {
	ref := refOf(gvr, gvk, obj)
	fd := Finding{Object: &ref, Finalizer: fin, Location: "metadata", Severity: SeverityBlocker}
	for _, p := range record.ReadProgress(obj) {
		if p.Finalizer == fin {
			p := p
			fd.Progress = &p
		}
	}
	entry, inCatalog := lookupCatalog(fin, gvk.Kind)
	if inCatalog {
		fd.Catalog, fd.Remedy, fd.Leaks = entry.ID, entry.Remedy, entry.Leaks
	}
	sub := subject{GVR: gvr, GVK: gvk, Obj: obj, Index: index, Depth: depth, Entry: entry, InCatalog: inCatalog}
	if check := lookupCheck(fin, gvr, gvk.Kind); check != nil {
		check(e, ctx, &fd, sub)
	} else {
		e.ownedFinalizer(ctx, &fd, sub)
	}
	// A platform of which nothing is installed (platforms.go).
	e.platformAbsent(ctx, &fd, sub)
	// What the owner says about the object comes before any guess.
	e.ownerSays(ctx, &fd, sub)
	// A live owner: what it waits on, from the cluster (waiting.go).
	e.waitingFor(ctx, &fd, sub)
	// B3: would the API server accept the removal at all?
	if check := e.dryRunRemoval(ctx, gvr, obj, index, fin); check != nil {
		fd.Removal = check
		if !check.Allowed {
			fd.Children = append(fd.Children, Finding{Cause: CauseRemovalRejected, Catalog: "B3", Severity: SeverityBlocker, Object: &ref, Finalizer: fin,
				Message:  "a server-side dry-run of the patch removing this finalizer is rejected: " + check.Error,
				FixOwner: "webhook or policy owner; platform team",
				Remedy:   "fix or exempt the admission webhook or policy named in the error; then the owner (or release) can remove the finalizer",
				Leaks:    "nothing: nobody, including its owner, can remove the finalizer until this is fixed"})
		}
	}
	return fd
}
