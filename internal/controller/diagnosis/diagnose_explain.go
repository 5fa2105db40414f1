/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
)

// The causes the controller reports without a stuck object of the engine's
// catalog are the engine's too (internal/diagnose/stepwaits.go): one
// vocabulary for explain, status and the controller.
const (
	CauseWebhookFailing   = diagnose.CauseWebhookFailing
	CauseStepFailing      = diagnose.CauseStepFailing
	CausePodWaiting       = diagnose.CausePodWaiting
	CauseStillInUse       = diagnose.CauseStillInUse
	CauseNotDeleted       = diagnose.CauseNotDeleted
	CauseJobRunning       = diagnose.CauseJobRunning
	CauseOutsideNamespace = diagnose.CauseOutsideNamespace
)

// maxDiagnosisMessage bounds diagnosis.message, as the CRD does.
const maxDiagnosisMessage = 512

// diagnosis is one pass's reading of what holds a guarded object.
type diagnosis struct {
	cause, catalog, message string
	blocker                 *teardownv1alpha1.ObjectReference
	// finalizer is the blocking finalizer, when the cause is about one.
	finalizer string
	// ownerNamespace is where the workload that should remove the
	// blocking finalizer runs, when the engine found it.
	ownerNamespace string
}

// same is true when d and o name the same root cause (an Event is emitted
// only when it changes).
func (d diagnosis) same(o diagnosis) bool {
	return d.cause == o.cause && d.catalog == o.catalog && refString(d.blocker) == refString(o.blocker)
}

func refString(r *teardownv1alpha1.ObjectReference) string {
	if r == nil {
		return ""
	}
	return r.APIVersion + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// explainer is one pass's access to the engine: one kube.Cluster, so
// every list it reads is read once for all the objects of the pass.
type explainer struct {
	cluster *kube.Cluster
	now     time.Time
	// requests counts the engine's explanations (for the log).
	explained int
	// waits is what every cleanup waited on when the pass began (nil:
	// nothing known).
	waits *steps.WaitGraph
}

// engine is an Explainer of the pass's session. It skips the removal
// dry-run (B3): one request per finalizer, which explain makes.
func (x *explainer) engine() *diagnose.Explainer {
	return diagnose.NewExplainer(x.cluster, x.now).WithoutRemovalDryRun()
}

// diagnose finds the root cause of what the cleanup under key of obj waits
// on (w), and, when other finalizers than key remain on obj, of those. The
// first root cause found wins, in this order: a failing step, what the step
// waits on, the object's other finalizers; ok is false when nothing is
// found (a step working normally on objects that are not stuck).
func (x *explainer) diagnose(ctx context.Context, pol *policy.Policy, key string, gvk schema.GroupVersionKind, obj metav1.Object, w steps.Wait, hasWait bool) (diagnosis, bool) {
	if hasWait && w.Failure != "" {
		return fromFinding(diagnose.StepFailed(string(w.Action), w.Failure)), true
	}
	if d, ok := x.waitCycle(pol, key, obj); ok {
		return d, true
	}
	var found []diagnosis
	var fallback []diagnosis // waiting, not stuck: said only when nothing is
	if hasWait {
		for _, ref := range w.On {
			x.explained++
			f, stuck, ok := x.engine().WaitingOn(ctx, string(w.Action), diagnose.StepRef{GVK: ref.GVK, Namespace: ref.Namespace, Name: ref.Name})
			switch {
			case !ok:
			case stuck:
				found = append(found, fromFinding(f))
			default:
				fallback = append(fallback, fromFinding(f))
			}
		}
	}
	if others := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == key }); len(found) == 0 && len(others) > 0 {
		found = append(found, x.explainObject(ctx, gvk, obj.GetNamespace(), obj.GetName(), key)...)
	}
	found = append(found, fallback...)
	if len(found) == 0 {
		return diagnosis{}, false
	}
	d := found[0]
	if n := len(found) - 1; n > 0 {
		d.message += fmt.Sprintf(" (+%d more)", n)
	}
	if pol.Ref.Kind == policy.KindNamespaced {
		d = tenantView(d, pol.Ref.Namespace, gvk, obj)
	}
	d.message = diagnose.Shorten(d.message, maxDiagnosisMessage)
	return d, true
}

// explainObject runs the engine on one object and returns its root
// blockers, leaving out those about the finalizer skip (the policy's own).
func (x *explainer) explainObject(ctx context.Context, gvk schema.GroupVersionKind, namespace, name, skip string) []diagnosis {
	x.explained++
	var out []diagnosis
	for _, f := range x.engine().RootBlockers(ctx, diagnose.StepRef{GVK: gvk, Namespace: namespace, Name: name}) {
		if skip != "" && f.Finalizer == skip && f.Object != nil && f.Object.Name == name && f.Object.Namespace == namespace {
			continue
		}
		out = append(out, fromFinding(f))
	}
	return out
}

// fromFinding is the engine's finding as the controller records it.
func fromFinding(f diagnose.Finding) diagnosis {
	d := diagnosis{cause: f.Cause, catalog: f.Catalog, message: diagnose.Sentence(f), finalizer: f.Finalizer}
	if f.Object != nil {
		d.blocker = &teardownv1alpha1.ObjectReference{APIVersion: f.Object.APIVersion, Kind: f.Object.Kind, Namespace: f.Object.Namespace, Name: f.Object.Name}
	}
	if f.Owner != nil && f.Owner.Workload != nil {
		d.ownerNamespace = f.Owner.Workload.Namespace
	}
	return d
}

// tenantView keeps a TeardownPolicy's diagnosis to its own namespace: the
// engine runs as the controller, which reads more than the policy's author
// may. A root cause about an object elsewhere becomes OutsideNamespace with
// no detail; one about an object of the namespace whose finalizer's owner
// runs elsewhere keeps the object and the finalizer (both the author's to
// read) and says no more of the owner.
func tenantView(d diagnosis, ns string, gvk schema.GroupVersionKind, obj metav1.Object) diagnosis {
	blockerInside := d.blocker == nil || d.blocker.Namespace == ns
	if blockerInside && (d.ownerNamespace == "" || d.ownerNamespace == ns) {
		return d
	}
	if blockerInside && d.blocker != nil && d.finalizer != "" {
		return diagnosis{cause: CauseOutsideNamespace, blocker: d.blocker, finalizer: d.finalizer,
			message: fmt.Sprintf("%s %s/%s: %s: the finalizer's owner runs outside namespace %s; %s", d.blocker.Kind, d.blocker.Namespace, d.blocker.Name, d.finalizer, ns, adminCanExplain(gvk, obj))}
	}
	return outsideNamespace(ns, gvk, obj)
}

// outsideNamespace is the tenant's diagnosis of a cause that lies outside
// its namespace: that it does, and who can see it.
func outsideNamespace(ns string, gvk schema.GroupVersionKind, obj metav1.Object) diagnosis {
	return diagnosis{cause: CauseOutsideNamespace, message: fmt.Sprintf("the root cause lies outside namespace %s; %s", ns, adminCanExplain(gvk, obj))}
}

func adminCanExplain(gvk schema.GroupVersionKind, obj metav1.Object) string {
	explain := fmt.Sprintf("a cluster admin can run: kubectl teardown explain %s %s", strings.ToLower(gvk.Kind), obj.GetName())
	if obj.GetNamespace() != "" { // a Namespace target has none
		explain += " -n " + obj.GetNamespace()
	}
	return explain
}

// waitCycle is the diagnosis of a cleanup that waits, through other
// cleanups, on its own object (steps.WaitGraph.Cycle).
func (x *explainer) waitCycle(pol *policy.Policy, key string, obj metav1.Object) (diagnosis, bool) {
	if x.waits == nil {
		return diagnosis{}, false
	}
	cycle, ok := x.waits.Cycle(key, obj.GetUID())
	if !ok {
		return diagnosis{}, false
	}
	links := make([]diagnose.CycleLink, len(cycle))
	for i, w := range cycle {
		links[i] = diagnose.CycleLink{Object: diagnose.StepRef{GVK: w.Target.GVK, Namespace: w.Target.Namespace, Name: w.Target.Name},
			Policy: w.Policy.String(), Step: w.Step}
	}
	if pol.Ref.Kind == policy.KindNamespaced {
		// A tenant learns nothing of other namespaces' objects or of
		// cluster policies: a cycle through them is said to lie outside.
		for _, w := range cycle {
			if w.Target.Namespace != pol.Ref.Namespace || w.Policy.Kind != policy.KindNamespaced || w.Policy.Namespace != pol.Ref.Namespace {
				return outsideNamespace(pol.Ref.Namespace, cycle[0].Target.GVK, obj), true
			}
		}
	}
	d := fromFinding(diagnose.WaitCycle(links))
	d.message = diagnose.Shorten(d.message, maxDiagnosisMessage)
	return d, true
}
