/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Causes of this family (see report.go).
const (
	CauseDiscoveryFailed           = "DiscoveryFailed"           // A1
	CauseGroupVersionParsingFailed = "GroupVersionParsingFailed" // A4
	CauseContentDeletionFailed     = "ContentDeletionFailed"     // A5
	CauseContentWithFinalizers     = "ContentRemainingWithFinalizers"
	CauseContentWithoutFinalizers  = "ContentRemainingWithoutFinalizers"
	CausePodsFirst                 = "PodsDeletedFirst"           // KEP-5080
	CauseForeignSpecFinalizer      = "ForeignSpecFinalizer"       // A10
	CauseNamespaceControllerIdle   = "NamespaceControllerIdle"    // A11
	CauseOrphanedContent           = "OrphanedInDeletedNamespace" // A12
)

// namespaceEntries are the namespace controller's token.
var namespaceEntries = []Entry{
	{Finalizer: "kubernetes", Kinds: []string{"Namespace"}, Component: "namespace controller (kube-controller-manager)", BuiltIn: true, ID: "C15",
		Remedy: "fix what blocks the namespace controller (the findings below); it removes this token itself through /finalize",
		Leaks:  "every object still in the namespace stays in etcd, invisible, and reappears if the namespace is recreated", Strip: StripForbidden},
}

// namespaceControllerGrace is how long a terminating namespace may go
// without any condition before explain says the namespace controller is not
// running (A11); its first pass writes them within seconds.
const namespaceControllerGrace = time.Minute

var (
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvkNamespace = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
)

// namespaceFindings walks §4 step 2 for a namespace.
func (e *Explainer) namespaceFindings(ctx context.Context, u *unstructured.Unstructured) []Finding {
	ns := &corev1.Namespace{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ns); err != nil {
		return []Finding{{Cause: "Unreadable", Severity: SeverityInfo, Message: err.Error()}}
	}
	ref := ObjectRef{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: ns.Name, UID: string(ns.UID)}
	if ns.DeletionTimestamp == nil {
		return []Finding{{Cause: "NotTerminating", Severity: SeverityInfo, Object: &ref, Message: fmt.Sprintf("namespace %s is not being deleted", ns.Name)}}
	}
	var out []Finding
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			out = append(out, e.kubernetesFinalizer(ctx, ns, ref))
			continue
		}
		// A10: a foreign token only its owner's /finalize call removes.
		fd := Finding{Cause: CauseForeignSpecFinalizer, Catalog: "A10", Severity: SeverityBlocker, Object: &ref, Finalizer: string(f), Location: "spec",
			FixOwner: "the component that owns the token"}
		entry, ok := lookupCatalog(string(f), "Namespace")
		fd.Owner = e.findOwner(ctx, gvrNamespace, gvkNamespace, ns, string(f), entry, ok)
		if string(f) == "foregroundDeletion" || string(f) == "orphan" {
			fd.Owner = &Owner{Source: SourceNone, State: OwnerUnknown}
			fd.Message = fmt.Sprintf("spec.finalizers holds %q, a metadata finalizer put there by mistake: nothing removes it from spec", f)
		} else {
			fd.Message = fmt.Sprintf("spec.finalizers holds the foreign token %q; only its owner's call to /finalize removes it (owner: %s, %s)", f, orUnknown(fd.Owner.Component), fd.Owner.State)
		}
		fd.Remedy = fmt.Sprintf("if its owner is gone: kubectl teardown release namespace/%s --finalizer %s --reason '...' (removes only this token through /finalize, with a resourceVersion precondition)", ns.Name, f)
		fd.Leaks = "whatever the token's owner cleans up when a namespace goes away"
		if fd.Owner.State == OwnerAlive {
			fd.Severity = SeverityWaiting
		}
		out = append(out, fd)
	}
	// A9: metadata finalizers on the Namespace object itself.
	for i, f := range ns.Finalizers {
		fd := e.finalizerFinding(ctx, gvrNamespace, gvkNamespace, u, i, f, 0)
		fd.Catalog = "A9"
		fd.Message += " (a metadata finalizer on the Namespace itself: the namespace stays after its content is gone)"
		out = append(out, fd)
	}
	sortFindings(out)
	return out
}

// kubernetesFinalizer explains the namespace controller's spec token: its
// conditions, aggregated APIs, webhooks and remaining content.
func (e *Explainer) kubernetesFinalizer(ctx context.Context, ns *corev1.Namespace, ref ObjectRef) Finding {
	fd := Finding{Cause: "NamespaceContentCleanup", Catalog: "C15", Severity: SeverityWaiting, Object: &ref, Finalizer: "kubernetes", Location: "spec",
		Owner:   &Owner{Component: "namespace controller (kube-controller-manager)", Source: SourceCatalog, State: OwnerUnknown},
		Message: "the namespace controller deletes the content, then removes this token through /finalize",
		Remedy:  "fix the findings below; never remove this token by hand (that orphans every object left in the namespace)",
		Leaks:   "every object still in the namespace stays in etcd and reappears if the namespace is recreated"}
	conds := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	for _, c := range ns.Status.Conditions {
		conds[c.Type] = c
	}
	// A11: the namespace controller writes its conditions on its first pass,
	// seconds after the deletion. None after a minute means it is not
	// running; a kube-controller-manager Lease not renewed past its
	// duration (or gone where leaders are elected) says so at once.
	kcm := e.kcmLiveness(ctx)
	fd.Owner.State = kcm.ownerState()
	fd.Owner.Evidence = []string{kcm.Evidence}
	if since := e.now.Sub(ns.DeletionTimestamp.Time); (len(conds) == 0 && since > namespaceControllerGrace) || kcm.Stopped() {
		why := "kube-controller-manager's namespace controller is not running: check that kube-controller-manager runs, and that its --controllers flag does not leave out the namespace controller (custom controller sets, managed control planes)"
		remedy := "fix kube-controller-manager so the namespace controller runs (it then deletes the content and removes the kubernetes token); do not strip finalizers"
		switch {
		case kcm.Stopped():
			why = kcm.why() + "; until it is back the namespace controller deletes nothing here and never removes the kubernetes token"
			remedy = "bring kube-controller-manager back: " + kcmCheck + "; once it renews its Lease, the namespace controller deletes the content and removes the kubernetes token; do not strip finalizers"
		case kcm.ownerState() == OwnerAlive:
			why = fmt.Sprintf("kube-controller-manager runs (%s), so its namespace controller is disabled (--controllers) or far behind", kcm.Evidence)
		}
		what := "the namespace controller has written no condition"
		if len(conds) > 0 {
			what = "the namespace controller's conditions are from its last pass"
		}
		fd.Children = append(fd.Children, Finding{Cause: CauseNamespaceControllerIdle, Catalog: "A11", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("terminating for %s and %s: %s", Age(since), what, why),
			FixOwner: "cluster operator",
			Remedy:   remedy,
			Leaks:    "nothing yet; stripping the kubernetes token instead would leave every object of the namespace in etcd, to reappear if the namespace is recreated"})
	}
	// A1/A2: every unavailable APIService blocks every terminating namespace.
	var apiFindings []Finding
	for _, s := range e.c.APIServices(ctx) {
		if f, ok := e.apiServiceFinding(ctx, s, ns.Name); ok {
			apiFindings = append(apiFindings, f)
		}
	}
	if c, ok := conds[condDiscoveryFailure]; ok && c.Status == corev1.ConditionTrue {
		gvs := parseDiscoveryFailure(c.Message)
		df := Finding{Cause: CauseDiscoveryFailed, Catalog: "A1", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("%s: %s", c.Reason, c.Message),
			FixOwner: "owner of the aggregated API; cluster admin",
			Remedy:   "make the named API groups available again, or delete their APIService if the API is abandoned; never strip the kubernetes token for this",
			Children: apiFindings}
		if len(apiFindings) == 0 {
			df.Message += fmt.Sprintf(" (group versions: %s; no APIService is unavailable now, so this may clear on the next pass, or an aggregated server lacks aggregated discovery: A3)", strings.Join(gvs, ", "))
		}
		fd.Children = append(fd.Children, df)
	} else {
		fd.Children = append(fd.Children, apiFindings...)
	}
	if c, ok := conds[condGVParsingFailure]; ok && c.Status == corev1.ConditionTrue {
		fd.Children = append(fd.Children, Finding{Cause: CauseGroupVersionParsingFailed, Catalog: "A4", Severity: SeverityBlocker, Object: &ref,
			Message: c.Message, FixOwner: "API server owner", Remedy: "fix or remove the APIService or CRD with the malformed group version"})
	}
	// A5: content deletion failures, mostly webhooks intercepting DELETE.
	if c, ok := conds[condContentFailure]; ok && c.Status == corev1.ConditionTrue {
		cf := Finding{Cause: CauseContentDeletionFailed, Catalog: "A5", Severity: SeverityBlocker, Object: &ref,
			Message: c.Message, FixOwner: "webhook or policy owner; platform team",
			Remedy: "restore the failing webhook's backend, or remove its configuration if its owner is being uninstalled"}
		names := parseWebhookNames(c.Message)
		for _, w := range e.webhooks(ctx) {
			if !containsString(names, w.Name) {
				continue
			}
			cf.Children = append(cf.Children, e.webhookFinding(ctx, w, ns.Name))
		}
		if len(cf.Children) == 0 {
			switch {
			case strings.Contains(c.Message, "unexpected items still remain"):
				// The controller's own wording for content without
				// finalizers (A7): the content findings below say which.
				cf.Severity, cf.Catalog = SeverityInfo, "A7"
				cf.FixOwner, cf.Remedy = "", "see the remaining content below"
			case storageReadFailure(c.Message):
				// F1: objects kube-apiserver cannot read, named below.
				cf.Severity, cf.Catalog = SeverityInfo, "F1"
				cf.FixOwner, cf.Remedy = "", "see the objects kube-apiserver cannot read, below"
			default:
				cf.Remedy = "read the error: a webhook or CRD conversion webhook down, a ValidatingAdmissionPolicy denying, or a corrupt object (F1); fix that"
			}
		}
		fd.Children = append(fd.Children, cf)
	}
	// A6/A7: what is left, from metadata-only lists of this namespace.
	fd.Children = append(fd.Children, e.contentFindings(ctx, ns, conds)...)
	for _, c := range fd.Children {
		if c.Severity == SeverityBlocker {
			fd.Severity = SeverityBlocker
		}
	}
	return fd
}

// contentFindings lists what remains in the namespace.
func (e *Explainer) contentFindings(ctx context.Context, ns *corev1.Namespace, conds map[corev1.NamespaceConditionType]corev1.NamespaceCondition) []Finding {
	items, errs := e.c.ScopeWithErrors(ctx, ns.Name)
	var out []Finding
	podsRemain, othersLive := 0, 0
	var with, without []kube.MetaItem
	for _, it := range items {
		// Events are recreated by the system and deleted last; not content.
		if it.Res.GVR.Resource == "events" {
			continue
		}
		if it.Res.GVR.Group == "" && it.Res.GVR.Resource == "pods" {
			podsRemain++
		} else if it.Obj.DeletionTimestamp == nil {
			othersLive++
		}
		if len(it.Obj.Finalizers) > 0 {
			with = append(with, it)
		} else {
			without = append(without, it)
		}
	}
	if podsRemain > 0 && othersLive > 0 {
		out = append(out, Finding{Cause: CausePodsFirst, Severity: SeverityInfo,
			Message: fmt.Sprintf("%d pod(s) remain: since Kubernetes 1.34 the namespace controller deletes pods first and the other %d object(s) only once the pods are gone", podsRemain, othersLive)})
	}
	condMsg := ""
	if c, ok := conds[condFinalizersRemaining]; ok && c.Status == corev1.ConditionTrue {
		condMsg = " (" + c.Message + ")"
	}
	for i, it := range with {
		if i == maxChildren {
			out = append(out, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more objects with finalizers not shown", len(with)-maxChildren)})
			break
		}
		ref := ItemRef(it)
		gvk := it.Res.GVR.GroupVersion().WithKind(it.Res.Kind)
		f := Finding{Cause: CauseContentWithFinalizers, Catalog: "A6", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("%s remains with finalizers %v%s", ref, it.Obj.Finalizers, condMsg),
			FixOwner: "see each finalizer"}
		if it.Obj.DeletionTimestamp == nil {
			f.Severity = SeverityWaiting
			f.Message = fmt.Sprintf("%s is not deleted yet (finalizers %v)", ref, it.Obj.Finalizers)
			if podsRemain > 0 {
				f.Message += "; it waits for the pods to go first"
			}
		} else {
			obj := it.Obj
			f.Children = e.objectFindings(ctx, it.Res.GVR, gvk, &obj, 1)
		}
		out = append(out, f)
	}
	for i, it := range without {
		if i == maxChildren {
			out = append(out, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more objects without finalizers not shown", len(without)-maxChildren)})
			break
		}
		ref := ItemRef(it)
		f := Finding{Cause: CauseContentWithoutFinalizers, Catalog: "A7", Severity: SeverityWaiting, Object: &ref,
			Message: fmt.Sprintf("%s remains without finalizers; the namespace controller deletes it on its next pass", ref)}
		if it.Res.GVR.Group == "" && it.Res.GVR.Resource == "pods" && it.Obj.DeletionTimestamp != nil {
			obj := it.Obj
			f.Children = e.podFindings(ctx, &obj)
			f.Message = fmt.Sprintf("%s is terminating without finalizers: only its kubelet (or a forced delete) removes it", ref)
			for _, c := range f.Children {
				if c.Severity == SeverityBlocker {
					f.Severity = SeverityBlocker
				}
			}
		} else if it.Obj.DeletionTimestamp != nil {
			f.Message = fmt.Sprintf("%s is terminating without finalizers for %s: a controller may be recreating it (see its managedFields) or the namespace controller has not passed yet", ref, Age(e.now.Sub(it.Obj.DeletionTimestamp.Time)))
			if e.now.Sub(it.Obj.DeletionTimestamp.Time) > DefaultGCStallAfter {
				f.Severity = SeverityBlocker
				f.Remedy = "find the controller that writes into this namespace (managedFields manager names) and stop it"
			}
		}
		out = append(out, f)
	}
	for _, err := range errs {
		out = append(out, e.listFailure(ctx, ns.Name, err)...) // corrupt.go
	}
	return out
}

// deletedNamespace looks for objects left in a namespace that no longer
// exists (A12), or returns notFound.
func (e *Explainer) deletedNamespace(ctx context.Context, t Target, notFound error) (*Report, error) {
	items := e.c.Scope(ctx, t.Name)
	var left []kube.MetaItem
	for _, it := range items {
		if it.Res.GVR.Resource != "events" {
			left = append(left, it)
		}
	}
	if len(left) == 0 {
		return e.vanished(ctx, t), notFound // vanished.go
	}
	rep := &Report{APIVersion: ReportAPIVersion, Kind: "ExplainReport", Target: t.Ref()}
	f := Finding{Cause: CauseOrphanedContent, Catalog: "A12", Severity: SeverityBlocker, Object: refPtr(t.Ref()),
		Message:  fmt.Sprintf("namespace %s no longer exists but %d object(s) are still stored in it: it was finalized before its content was deleted", t.Name, len(left)),
		FixOwner: "whoever removed the namespace's finalizer; cluster admin",
		Remedy:   fmt.Sprintf("recreate the namespace (kubectl create namespace %s) so normal deletion can run, then delete it again; or delete the objects directly", t.Name),
		Leaks:    "these objects reappear if a namespace with this name is created again"}
	for i, it := range left {
		if i == maxChildren {
			f.Children = append(f.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more not shown", len(left)-maxChildren)})
			break
		}
		ref := ItemRef(it)
		f.Children = append(f.Children, Finding{Cause: CauseOrphanedContent, Catalog: "A12", Severity: SeverityInfo, Object: &ref,
			Message: fmt.Sprintf("%s (finalizers %v)", ref, it.Obj.Finalizers)})
	}
	rep.Findings = []Finding{f}
	rep.RootBlockers = MarkRoots(rep.Findings)
	rep.Blocked = true
	return rep, nil
}
