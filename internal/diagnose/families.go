/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/internal/diagnose/signals"
)

// Causes of issue 26's families, read by internal/diagnose/signals once a
// finalizer's owner runs and says nothing (the questions asked before the
// engine may conclude that the cleanup progresses).
const (
	// CauseObjectPaused: the object itself says do not proceed: paused,
	// suspended, waiting for a lifecycle hook, blocked by something. Its
	// owner, however alive, does not act on it until that is cleared.
	CauseObjectPaused = "ObjectPaused"
	// CauseInUseBy: other objects name the target (ownerReferences to it,
	// spec fields holding its name): an in-use protection keeps it while
	// they exist.
	CauseInUseBy = "InUseBy"
	// CauseRemoverPlaceUnavailable: the object names where its remover
	// must act (a node, a member cluster, a zone), and that place is gone,
	// not Ready, or no longer reporting.
	CauseRemoverPlaceUnavailable = "RemoverPlaceUnavailable"
	// CauseHelperFailed: a pod or Job the owner created for its cleanup
	// (named in its words) failed; its own failure is the cause.
	CauseHelperFailed = "HelperFailed"
	// CauseNeedGoneWithNamespace: the owner needs an object (a Secret, a
	// ConfigMap, a ServiceAccount) that went with the object's namespace,
	// which is being deleted: it can never get it back there.
	CauseNeedGoneWithNamespace = "NeedGoneWithNamespace"
	// CauseNeedGone: the owner needs an object that is gone; recreating it
	// lets the owner finish.
	CauseNeedGone = "NeedGone"
	// CauseRecurringFailure: nothing changed since the deletion began and
	// the same failure is said again and again.
	CauseRecurringFailure = "RecurringFailure"
)

// familyWaits asks a live owner's finalizer the family questions of issue
// 26, from objects the run holds or one list per kind: the object's own
// marks, the place its remover acts in, what it needs that is gone, the
// helpers its owner names, the objects that name it, and whether the only
// news is the same failure again.
func (e *Explainer) familyWaits(ctx context.Context, fd *Finding, s subject) []Finding {
	if e.skipFamilies {
		return nil
	}
	u := e.fullObject(ctx, s)
	if u == nil {
		u = metaOnly(s)
	}
	ref := refOf(s.GVR, s.GVK, s.Obj)
	var out []Finding
	out = append(out, e.pausedFinding(u, ref, fd)...)
	out = append(out, e.placeFindings(ctx, u, ref, fd)...)
	out = append(out, e.needFindings(ctx, u, ref, fd)...)
	out = append(out, e.helperFindings(ctx, u, s, fd)...)
	if len(out) == 0 && fd.Cause == CauseCleanupInProgress {
		out = append(out, e.referrerFindings(ctx, u, s, fd)...)
	}
	if len(out) == 0 && (fd.Cause == CauseCleanupInProgress || fd.Cause == CauseOwnerReportsFailure) {
		out = append(out, e.recurringFinding(ctx, u, ref, fd)...)
	}
	return out
}

// metaOnly is the object as an unstructured with its metadata alone.
func metaOnly(s subject) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(s.GVK.GroupVersion().String())
	u.SetKind(s.GVK.Kind)
	u.SetNamespace(s.Obj.GetNamespace())
	u.SetName(s.Obj.GetName())
	u.SetUID(s.Obj.GetUID())
	u.SetAnnotations(s.Obj.GetAnnotations())
	u.SetLabels(s.Obj.GetLabels())
	u.SetOwnerReferences(s.Obj.GetOwnerReferences())
	u.SetDeletionTimestamp(s.Obj.GetDeletionTimestamp())
	return u
}

// pausedFinding: family 1.
func (e *Explainer) pausedFinding(u *unstructured.Unstructured, ref ObjectRef, fd *Finding) []Finding {
	marks := signals.Paused(u)
	if len(marks) == 0 {
		return nil
	}
	said := make([]string, 0, len(marks))
	var clear []string
	for _, m := range marks {
		said = append(said, m.String())
		if m.Clear != "" {
			clear = append(clear, m.Clear)
		}
	}
	remedy := "clear the mark (" + strings.Join(clear, "; ") + "); the owner then runs its cleanup and removes the finalizer"
	if len(clear) == 0 {
		remedy = "clear what the condition says holds it; the owner then runs its cleanup and removes the finalizer"
	}
	return []Finding{{Cause: CauseObjectPaused, Severity: SeverityBlocker, Object: &ref, Finalizer: fd.Finalizer,
		Message:  fmt.Sprintf("the object says do not proceed: %s; %s does not act on it until that is cleared", strings.Join(said, "; "), ownerName(fd)),
		FixOwner: "whoever paused it, or the controller named by the hook",
		Remedy:   remedy,
		Leaks:    "removing the finalizer by hand skips the cleanup the paused owner would run"}}
}

func ownerName(fd *Finding) string {
	if fd.Owner != nil && fd.Owner.Component != "" {
		return fd.Owner.Component
	}
	return "its owner"
}

// memberClusterKinds are the kinds whose objects are the member clusters of
// multi-cluster products (Karmada's Cluster, OCM's ManagedCluster, a fleet's
// Cluster): cluster-scoped, with a Ready or Available condition. Cluster
// API's Cluster is a workload cluster's description, not a place an agent
// reports from, and is left out.
func memberClusterKinds(resources []kube.APIResource) []kube.APIResource {
	var out []kube.APIResource
	for _, r := range resources {
		if r.Namespaced || r.GVR.Group == "cluster.x-k8s.io" || r.GVR.Group == "" {
			continue
		}
		switch r.Kind {
		case "Cluster", "ManagedCluster", "MemberCluster":
			out = append(out, r)
		}
	}
	return out
}

// placeFindings: family 3. Nodes come from the run's one list of Nodes,
// kubelets' heartbeats from its one list of Leases, member clusters from
// one list per member-cluster kind.
func (e *Explainer) placeFindings(ctx context.Context, u *unstructured.Unstructured, ref ObjectRef, fd *Finding) []Finding {
	w := signals.World{Now: e.now}
	resources, _ := e.c.Resources()
	for _, r := range memberClusterKinds(resources) {
		items, err := e.c.Objects(ctx, r.GVR, "")
		if err != nil {
			continue
		}
		w.ClustersListed = true
		for i := range items {
			w.Clusters = append(w.Clusters, &items[i])
		}
	}
	places := signals.Places(u, w.Clusters)
	if len(places) == 0 {
		return nil
	}
	for _, p := range places {
		if p.Kind != signals.PlaceNode {
			continue
		}
		n, err := e.c.Node(ctx, p.Name)
		switch {
		case err == nil:
			w.Nodes, w.NodesListed = append(w.Nodes, n), true
		case apierrors.IsNotFound(err):
			w.NodesListed = true
		}
	}
	if leases, err := e.c.Leases(ctx); err == nil {
		for i := range leases {
			if leases[i].Namespace == corev1.NamespaceNodeLease {
				w.NodeLeases = append(w.NodeLeases, &leases[i])
			}
		}
	}
	var out []Finding
	for _, p := range places {
		v := w.Judge(p)
		if v.State == signals.StateHealthy || v.State == signals.StateUnknown {
			continue
		}
		place := ObjectRef{APIVersion: "v1", Kind: string(p.Kind), Name: p.Name}
		if p.Kind == signals.PlaceNode {
			place.Resource = "nodes"
		}
		for _, c := range w.Clusters {
			if p.Kind == signals.PlaceCluster && c.GetName() == p.Name {
				// The member cluster as it is served: OCM's ManagedCluster,
				// Karmada's Cluster.
				place.APIVersion, place.Kind = c.GetAPIVersion(), c.GetKind()
			}
		}
		out = append(out, Finding{Cause: CauseRemoverPlaceUnavailable, Severity: SeverityBlocker, Object: &place, Finalizer: fd.Finalizer,
			Message: fmt.Sprintf("%s names %s %s (%s) as where its remover acts, and it is %s: %s; %s's workload may run, but nothing acts there",
				ref, p.Kind, p.Name, p.Via, v.State, v.Evidence, ownerName(fd)),
			FixOwner: "cluster or fleet admin (the place named)",
			Remedy:   fmt.Sprintf("bring %s %s back (or remove it for good, so its controller gives up); the remover then finishes", p.Kind, p.Name),
			Leaks:    "what the remover would clean up on " + p.Name})
	}
	return out
}

// needFindings: family 6. Presence comes from one metadata list of each
// kind needed, cluster-wide, read once per run.
func (e *Explainer) needFindings(ctx context.Context, u *unstructured.Unstructured, ref ObjectRef, fd *Finding) []Finding {
	if len(signals.Needs(u)) == 0 {
		return nil
	}
	var ns *corev1.Namespace
	if u.GetNamespace() != "" {
		ns, _ = e.c.Namespace(ctx, u.GetNamespace())
	}
	present := func(kind, namespace, name string) (bool, bool) {
		gvr, ok := needGVRs[kind]
		if !ok {
			return false, false
		}
		items, err := e.c.MetaOf(ctx, gvr)
		if err != nil {
			return false, false
		}
		for _, it := range items {
			if it.Namespace == namespace && it.Name == name {
				return true, true
			}
		}
		return false, true
	}
	var out []Finding
	for _, d := range signals.NamespaceDeadlocks(u, ns, present) {
		need := ObjectRef{APIVersion: "v1", Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}
		f := Finding{Cause: CauseNeedGone, Severity: SeverityBlocker, Object: &need, Finalizer: fd.Finalizer,
			Message:  fmt.Sprintf("%s needs %s, which is gone: %s", ref, d.Need, d.Remedy),
			FixOwner: "application owner",
			Remedy:   d.Remedy,
			Leaks:    "the external resources " + ownerName(fd) + " would clean up with it"}
		if d.Terminating {
			f.Cause = CauseNeedGoneWithNamespace
			f.FixOwner = "application owner / platform team"
		}
		out = append(out, f)
	}
	return out
}

// needGVRs are the kinds family 6 checks.
var needGVRs = map[string]schema.GroupVersionResource{
	"Secret":         {Version: "v1", Resource: "secrets"},
	"ConfigMap":      {Version: "v1", Resource: "configmaps"},
	"ServiceAccount": {Version: "v1", Resource: "serviceaccounts"},
}

// helperFindings: family 5. The helpers are named by the owner's words (the
// finding's message and evidence, the messages of the object's conditions);
// each is read from its namespace's one
// list of pods or Jobs; a Forbidden in its words is asked again with one
// SubjectAccessReview.
func (e *Explainer) helperFindings(ctx context.Context, u *unstructured.Unstructured, s subject, fd *Finding) []Finding {
	text := fd.Message
	if fd.Owner != nil {
		text += "\n" + strings.Join(fd.Owner.Evidence, "\n")
	}
	// The owner's words also in conditions that say no failure ("waiting
	// for job x to complete"): the helper they name may have failed.
	for _, m := range signals.ConditionMessages(u) {
		text += "\n" + m
	}
	var out []Finding
	for _, h := range signals.HelperRefs(text, s.Obj.GetNamespace()) {
		var f signals.HelperFailure
		var ok bool
		switch h.Kind {
		case "Pod":
			p, err := e.c.Pod(ctx, h.Namespace, h.Name)
			if err != nil {
				continue
			}
			f, ok = signals.PodFailure(p)
		case "Job":
			j, err := e.c.Job(ctx, h.Namespace, h.Name)
			if err != nil {
				continue
			}
			pods, _ := e.c.Pods(ctx, h.Namespace)
			ptrs := make([]*corev1.Pod, 0, len(pods))
			for i := range pods {
				ptrs = append(ptrs, &pods[i])
			}
			f, ok = signals.JobFailure(j, ptrs)
		}
		if !ok {
			continue
		}
		msg := fmt.Sprintf("%s's helper failed: %s", ownerName(fd), f)
		// status (a Bulk run) leaves the question to explain: its requests
		// must not grow with the objects it lists.
		if q := f.Access; q != nil && !e.c.IsBulk() {
			user := "system:serviceaccount:" + q.Namespace + ":" + q.ServiceAccount
			st, err := e.c.AccessReview(ctx, user, []string{"system:serviceaccounts", "system:serviceaccounts:" + q.Namespace, "system:authenticated"},
				authorizationv1.ResourceAttributes{Verb: q.Verb, Group: q.Group, Resource: q.Resource, Namespace: q.In})
			switch {
			case err != nil:
				msg += "; whether it may now could not be asked: " + err.Error()
			case st.Allowed:
				msg += "; a SubjectAccessReview now allows it (" + q.String() + "): the right was granted since, the owner's next attempt should pass"
			default:
				msg += "; a SubjectAccessReview confirms it may not (" + q.String() + ")"
			}
		}
		helper := ObjectRef{APIVersion: h.APIVersion, Kind: h.Kind, Namespace: h.Namespace, Name: h.Name}
		out = append(out, Finding{Cause: CauseHelperFailed, Severity: SeverityBlocker, Object: &helper, Finalizer: fd.Finalizer,
			Message:  msg,
			FixOwner: "whoever runs " + ownerName(fd) + " (its helper's failure, below)",
			Remedy:   "fix what the helper's failure says (its rights, its scheduling, its image, the data it acts on); the owner retries and then removes the finalizer",
			Leaks:    "what the helper was to clean up"})
	}
	return out
}

// referrerFindings: family 2. The candidates are the objects of the kinds
// that can plausibly name the target (signals.PlausibleKinds), in one list
// per kind (and namespace, for a namespaced target), held by the run.
func (e *Explainer) referrerFindings(ctx context.Context, u *unstructured.Unstructured, s subject, fd *Finding) []Finding {
	resources, _ := e.c.Resources()
	served := make([]schema.GroupVersionKind, 0, len(resources))
	byGVK := map[schema.GroupVersionKind]kube.APIResource{}
	for _, r := range resources {
		gvk := r.GVR.GroupVersion().WithKind(r.Kind)
		served = append(served, gvk)
		byGVK[gvk] = r
	}
	var candidates []*unstructured.Unstructured
	for _, gvk := range signals.PlausibleKinds(s.GVK, served, nil) {
		r := byGVK[gvk]
		ns := ""
		if r.Namespaced && s.Obj.GetNamespace() != "" {
			ns = s.Obj.GetNamespace()
		}
		items, err := e.c.Objects(ctx, r.GVR, ns)
		if err != nil {
			continue
		}
		for i := range items {
			candidates = append(candidates, &items[i])
		}
	}
	refs, total := signals.Referrers(signals.TargetOf(u), candidates)
	var out []Finding
	for _, r := range refs {
		by := ObjectRef{APIVersion: r.Object.APIVersion, Kind: r.Object.Kind, Namespace: r.Object.Namespace, Name: r.Object.Name}
		f := Finding{Cause: CauseInUseBy, Severity: SeverityBlocker, Object: &by, Finalizer: fd.Finalizer,
			Message:  fmt.Sprintf("%s names it (%s, %s): %s keeps the target while it is in use", by, r.Via, r.Strength, ownerName(fd)),
			FixOwner: "whoever owns " + by.String(),
			Remedy:   fmt.Sprintf("delete %s, or point it elsewhere; the owner then removes the finalizer", by),
			Leaks:    "removing the finalizer by hand leaves " + by.String() + " naming an object that is gone"}
		if r.Strength != signals.StrengthCertain {
			// A likely reference (a name under some ...Ref) does not say
			// the finalizer waits for it; a certain one (an ownerReference,
			// a field named after the target's kind) does, once its owner
			// runs and says nothing else: it is kept while named.
			f.Severity = SeverityWaiting
			f.Message = fmt.Sprintf("%s names it (%s, %s); if %q is an in-use protection, %s keeps the target while it does", by, r.Via, r.Strength, fd.Finalizer, ownerName(fd))
			f.Remedy = "if the owner's finalizer protects objects in use, delete or repoint " + by.String()
		}
		if r.Deleting {
			f.Severity = SeverityWaiting
			f.Message = fmt.Sprintf("%s names it (%s) and is itself being deleted: the target goes after it", by, r.Via)
			f.Remedy = "wait for it; if it stays, explain it"
		}
		out = append(out, f)
	}
	if total > len(refs) {
		out = append(out, Finding{Cause: CauseInUseBy, Severity: SeverityInfo, Finalizer: fd.Finalizer,
			Message: fmt.Sprintf("and %d more objects name it", total-len(refs))})
	}
	return out
}

// recurringFinding: family 7's half the engine's walk can say: nothing has
// changed since the deletion began and the same failure recurs. The
// object's Events come from its namespace's one list.
func (e *Explainer) recurringFinding(ctx context.Context, u *unstructured.Unstructured, ref ObjectRef, fd *Finding) []Finding {
	events, err := e.c.Events(ctx, u.GetNamespace())
	if err != nil {
		return nil
	}
	var about []corev1.Event
	for _, ev := range events {
		if ev.InvolvedObject.UID == u.GetUID() {
			about = append(about, ev)
		}
	}
	a := signals.Progress(signals.ProgressInput{Object: u, Events: about, Now: e.now, Window: ProgressWindow})
	if a.Progressing || len(a.Against) == 0 {
		return nil
	}
	said := make([]string, 0, len(a.Against))
	for _, ev := range a.Against {
		said = append(said, ev.What)
	}
	f := Finding{Cause: CauseRecurringFailure, Severity: SeverityBlocker, Object: &ref, Finalizer: fd.Finalizer,
		Message:  fmt.Sprintf("nothing about it changed in the last %s, and the same failure recurs: %s", signals.Age(a.Window), strings.Join(said, "; ")),
		FixOwner: "whoever runs " + ownerName(fd),
		Remedy:   "fix what the recurring failure says; retries alone will not finish"}
	if fd.Cause == CauseOwnerReportsFailure {
		// The owner's own words stay the cause; the recurrence says they
		// are not news.
		f.Severity = SeverityWarning
	}
	return []Finding{f}
}

// runningWriter: family 4. The workload that runs the client which wrote
// the finalizer, scored by what runs (command and args, image, container,
// labels, ServiceAccount: signals.MatchRemover) from the run's lists of
// Deployments, StatefulSets and DaemonSets; none when no workload matches
// or several match equally.
func (e *Explainer) runningWriter(ctx context.Context, manager string) (signals.Match, bool) {
	ws := kube.Memo(e.c, "signals/workloads", func() []signals.Workload {
		var out []signals.Workload
		if l, err := e.c.Deployments(ctx); err == nil {
			for _, d := range l {
				out = append(out, signals.WorkloadOf(signals.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}, d.Labels, d.Spec.Template.Spec))
			}
		}
		if l, err := e.c.StatefulSets(ctx); err == nil {
			for _, s := range l {
				out = append(out, signals.WorkloadOf(signals.Ref{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name}, s.Labels, s.Spec.Template.Spec))
			}
		}
		if l, err := e.c.DaemonSets(ctx); err == nil {
			for _, d := range l {
				out = append(out, signals.WorkloadOf(signals.Ref{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name}, d.Labels, d.Spec.Template.Spec))
			}
		}
		return out
	})
	ms := signals.MatchRemover(manager, "", ws, nil)
	if len(ms) == 0 || ms[0].Confidence == signals.ConfidenceAmbiguous {
		return signals.Match{}, false
	}
	return ms[0], true
}

// workloadRunning: family 4 for the owner's liveness. No workload is named
// or labelled after the client that wrote the finalizer, but one runs it
// (a provider named after its package revision, a controller under the
// user's release name): that workload is the owner's, judged as any other,
// so an operator that runs is never called missing; as any candidate, it is
// passed over when it is another installation (remover.go, bestRemover).
func (e *Explainer) workloadRunning(ctx context.Context, gvr schema.GroupVersionResource, obj metav1.Object, o *Owner) (workload, bool) {
	m, ok := e.runningWriter(ctx, o.Manager)
	if !ok {
		return workload{}, false
	}
	for _, w := range workloadList(ctx, e.c) {
		if w.Ref.Kind != m.Workload.Ref.Kind || w.Ref.Namespace != m.Workload.Ref.Namespace || w.Ref.Name != m.Workload.Ref.Name {
			continue
		}
		if _, ok := e.bestRemover(ctx, gvr, obj, o, []workload{w}); !ok {
			return workload{}, false
		}
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s runs %q, the client that wrote the finalizer (%s)", w.Ref, o.Manager, strings.Join(m.Why, "; ")))
		o.Confidence = ConfidenceLikely
		return w, true
	}
	return workload{}, false
}
