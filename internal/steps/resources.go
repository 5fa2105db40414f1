/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/queuekey"
	"github.com/teardown-dev/teardown/internal/waits"
)

// listScope is where one resource selector of a step looks: its kind, the
// options of its list call and, when the list spans every namespace for a
// namespaceSelector with labels, the namespaces whose objects count.
type listScope struct {
	gvk  schema.GroupVersionKind
	opts []client.ListOption
	// namespaces selects, by their labels, the namespaces whose listed
	// objects count; nil when every listed object does.
	namespaces labels.Selector
}

// listOptions scopes a step's resource selector: namespaced kinds are looked
// up in the target's namespace (inside the target itself when it is a
// Namespace; every namespace for another cluster-scoped target), or, for a
// ClusterTeardownPolicy's namespaceSelector, in every namespace ({}) or in
// those whose labels match; cluster-scoped kinds cluster-wide. A
// TeardownPolicy's steps reach only namespaced kinds in its own namespace
// (ScopeError otherwise; admission and validation refuse such a policy
// before it is served).
func (r *Runner) listOptions(pol *policy.Policy, res teardownv1alpha1.ResourceSelector, t Object) (listScope, error) {
	gv, err := schema.ParseGroupVersion(res.APIVersion)
	if err != nil {
		return listScope{}, fmt.Errorf("apiVersion %q: %w", res.APIVersion, err)
	}
	sc := listScope{gvk: gv.WithKind(res.Kind)}
	mapping, err := r.Mapper.RESTMapping(sc.gvk.GroupKind(), sc.gvk.Version)
	if err != nil {
		return sc, fmt.Errorf("kind %s: %w", sc.gvk, err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case pol.Ref.Kind == policy.KindNamespaced:
		if !namespaced || res.NamespaceSelector != nil {
			return sc, &ScopeError{Kind: sc.gvk.Kind, NamespaceSelector: res.NamespaceSelector != nil}
		}
		sc.opts = append(sc.opts, client.InNamespace(pol.Ref.Namespace))
	case res.NamespaceSelector != nil:
		if !namespaced {
			return sc, fmt.Errorf("namespaceSelector of %s: %s is cluster-scoped", sc.gvk.Kind, sc.gvk.Kind)
		}
		sel, err := metav1.LabelSelectorAsSelector(res.NamespaceSelector)
		if err != nil {
			return sc, fmt.Errorf("namespaceSelector of %s: %w", sc.gvk.Kind, err)
		}
		if !sel.Empty() {
			sc.namespaces = sel
		}
	case !namespaced:
	case t.Obj.GetNamespace() != "":
		sc.opts = append(sc.opts, client.InNamespace(t.Obj.GetNamespace()))
	case t.GVK.Group == "" && t.GVK.Kind == "Namespace":
		// A Namespace's steps are about what is inside it.
		sc.opts = append(sc.opts, client.InNamespace(t.Obj.GetName()))
	}
	if res.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(res.Selector)
		if err != nil {
			return sc, fmt.Errorf("selector of %s: %w", sc.gvk.Kind, err)
		}
		sc.opts = append(sc.opts, client.MatchingLabelsSelector{Selector: sel})
	}
	return sc, nil
}

// inNamespaces returns whether an object of a namespace counts for sc: read
// with reader (the step's identity) when sc selects namespaces by label,
// every namespace otherwise.
func inNamespaces(ctx context.Context, reader client.Reader, sc listScope) (func(ns string) bool, error) {
	if sc.namespaces == nil {
		return func(string) bool { return true }, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := reader.List(ctx, list, client.MatchingLabelsSelector{Selector: sc.namespaces}); err != nil {
		return nil, fmt.Errorf("listing the namespaces of %s's namespaceSelector: %w", sc.gvk.Kind, err)
	}
	in := make(map[string]bool, len(list.Items))
	for _, ns := range list.Items {
		in[ns.Name] = true
	}
	return func(ns string) bool { return in[ns] }, nil
}

// listSelected lists into list the objects of res that a step of pol
// selects for t, as metadata, keeping only those of the namespaces it looks
// in.
func (r *Runner) listSelected(ctx context.Context, reader client.Reader, pol *policy.Policy, res teardownv1alpha1.ResourceSelector, t Object, list *metav1.PartialObjectMetadataList) (schema.GroupVersionKind, error) {
	sc, err := r.listOptions(pol, res, t)
	if err != nil {
		return sc.gvk, err
	}
	in, err := inNamespaces(ctx, reader, sc)
	if err != nil {
		return sc.gvk, err
	}
	list.SetGroupVersionKind(sc.gvk.GroupVersion().WithKind(sc.gvk.Kind + "List"))
	if err := reader.List(ctx, list, sc.opts...); err != nil {
		return sc.gvk, fmt.Errorf("listing %s: %w", sc.gvk.Kind, err)
	}
	list.Items = slices.DeleteFunc(list.Items, func(o metav1.PartialObjectMetadata) bool { return !in(o.Namespace) })
	return sc.gvk, nil
}

// ScopeError says a TeardownPolicy's step names a cluster-scoped kind, or
// sets a namespaceSelector.
type ScopeError struct {
	Kind              string
	NamespaceSelector bool
}

func (e *ScopeError) Error() string {
	if e.NamespaceSelector {
		return fmt.Sprintf("namespaceSelector of %s: a TeardownPolicy's steps look only in its own namespace; use a ClusterTeardownPolicy", e.Kind)
	}
	return fmt.Sprintf("%s is cluster-scoped: a TeardownPolicy's steps reach only namespaced kinds in its own namespace; use a ClusterTeardownPolicy", e.Kind)
}

func (r *Runner) delete(ctx context.Context, pol *policy.Policy, key string, i int, d *teardownv1alpha1.DeleteAction, t Object) outcome {
	reader, writer, err := r.clients(pol)
	if err != nil {
		return transient(err)
	}
	propagation := d.PropagationPolicy
	if propagation == "" {
		propagation = metav1.DeletePropagationForeground
	}
	watch, err := r.watchDependencies(pol, key, i, t, d.Resources)
	if err != nil {
		return transient(err)
	}
	var remaining []mention
	var waiting outcome // collects what the step waits on
	readers := audienceOf(t)
	for _, res := range d.Resources {
		list := &metav1.PartialObjectMetadataList{}
		gvk, err := r.listSelected(ctx, reader, pol, res, t, list)
		if err != nil {
			return watch.finish(transient(err))
		}
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(gvk)
			remaining = append(remaining, mention{namespace: obj.Namespace, text: objectText(gvk.Kind, obj.Namespace, obj.Name)})
			waiting.waitingOn(gvk, obj.Namespace, obj.Name)
			if obj.DeletionTimestamp != nil {
				continue // already going; deleting again only costs a write
			}
			err := writer.Delete(ctx, obj, client.PropagationPolicy(propagation), client.Preconditions{UID: &obj.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return watch.finish(transient(fmt.Errorf("deleting %s: %w", readers.name(gvk.Kind, obj.Namespace, obj.Name), readers.hide(obj.Namespace, err))))
			}
		}
	}
	if len(remaining) == 0 {
		return watch.finish(done())
	}
	// Named only where the target's readers could list them (a cluster
	// policy's step may delete cluster-scoped objects): the rest counted.
	out := pending(0, "waiting for %d object(s) to be gone: %s", len(remaining), readers.summarizeFor(remaining))
	out.waitsOn = waiting.waitsOn
	return watch.finish(out)
}

func (r *Runner) wait(ctx context.Context, pol *policy.Policy, key string, i int, cond cel.Program, w *teardownv1alpha1.WaitAction, t Object) outcome {
	reader, _, err := r.clients(pol)
	if err != nil {
		return transient(err)
	}
	if cond == nil {
		return transient(fmt.Errorf("condition %q is not compiled", orDefault(w.Condition, policy.DefaultCondition)))
	}
	watch, err := r.watchDependencies(pol, key, i, t, w.Resources)
	if err != nil {
		return transient(err)
	}
	var objects []any
	var selected []mention
	idle := 0
	var waiting outcome // collects what the step waits on
	for _, res := range w.Resources {
		// Only what the condition reads, bounded (wait_read.go).
		gvk, read, err := r.readForCondition(ctx, reader, pol, res, pol.Steps[i].Reads, w.Include, t)
		if err != nil {
			return watch.finish(transient(err))
		}
		objects = append(objects, read.objects...)
		idle += read.idle
		for _, n := range read.names {
			waiting.waitingOn(gvk, n.Namespace, n.Name)
			selected = append(selected, mention{namespace: n.Namespace, text: objectText(gvk.Kind, n.Namespace, n.Name)})
		}
	}
	expr := orDefault(w.Condition, policy.DefaultCondition)
	out := evalCondition(ctx, cond, expr, objects)
	if !out.done && out.err == nil {
		out.message = "waiting until " + expr + " (" + selectedText(audienceOf(t), w.Include, selected, idle) + ")"
		out.waitsOn = waiting.waitsOn
	}
	return watch.finish(out)
}

// selectedText says which objects a pending wait step's condition saw, as
// far as the target's readers may see them (the others counted), and how
// many of them nobody is deleting: "2 object(s) selected: Widget ops/a and
// 1 object outside namespace ops; 1 not being deleted".
func selectedText(readers Audience, include teardownv1alpha1.WaitInclude, selected []mention, idle int) string {
	text := fmt.Sprintf("%d object(s) selected", len(selected))
	if include == teardownv1alpha1.WaitIncludeDeleting {
		text = fmt.Sprintf("%d object(s) being deleted", len(selected))
	}
	if len(selected) > 0 {
		text += ": " + readers.summarizeFor(selected)
	}
	if idle > 0 {
		text += fmt.Sprintf("; %d not being deleted", idle)
	}
	return text
}

// evalCondition evaluates a wait step's compiled condition over the selected
// objects. expr is the condition's text, for messages.
func evalCondition(ctx context.Context, cond cel.Program, expr string, objects []any) outcome {
	val, _, err := cond.ContextEval(ctx, map[string]any{"objects": objects})
	if err != nil {
		// cel-go's error text can hold evaluated values ("no such key:
		// <the value of a Secret>"): only a fixed category is repeated, and
		// the error is not wrapped, so no caller can print it either.
		return transient(fmt.Errorf("condition %q failed to evaluate: %s", expr, celErrorCategory(err)))
	}
	ok, isBool := val.Value().(bool)
	switch {
	case !isBool:
		// The type, never the value.
		return transient(fmt.Errorf("condition %q returned a %s, not a bool", expr, val.Type().TypeName()))
	case ok:
		return done()
	default:
		return pending(0, "waiting until %s (%d object(s) selected)", expr, len(objects))
	}
}

// celCategories maps the start of cel-go's runtime error messages to what
// may be repeated of them: the category, never the rest, which can quote
// evaluated values.
var celCategories = []struct{ prefix, category string }{
	{"no such key", "no such key"},
	{"no such field", "no such field"},
	{"no such attribute", "no such attribute"},
	{"no such overload", "no matching overload (a value of an unexpected type)"},
	{"no matching overload", "no matching overload (a value of an unexpected type)"},
	{"division by zero", "division by zero"},
	{"modulus by zero", "modulus by zero"},
	{"index out of range", "index out of range"},
	{"index out of bounds", "index out of range"},
	{"index '", "index out of range"},
	{"invalid index", "index out of range"},
	{"type conversion error", "type conversion error"},
	{"optional.none() dereference", "empty optional dereferenced"},
	{"operation interrupted", "evaluation interrupted"},
	{"error parsing regexp", "invalid regular expression"},
}

// celErrorCategory says what kind of error a condition's evaluation hit, in
// words fixed here; anything unknown is "evaluation error".
func celErrorCategory(err error) string {
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) || strings.HasPrefix(err.Error(), "operation cancelled") {
		return "evaluation cancelled or over its cost limit"
	}
	msg := err.Error()
	for _, c := range celCategories {
		if strings.HasPrefix(msg, c.prefix) {
			return c.category
		}
	}
	if strings.Contains(msg, "overflow") {
		return "integer overflow"
	}
	return "evaluation error"
}

// stepWatch is a pending wait or delete step's registration with
// Runner.Waits: the step runs again as soon as an object it depends on
// changes or goes, instead of at its next poll.
//
// The watch behind it runs as the controller, but it only wakes the step:
// the step still reads what it decides on with its own identity (a
// TeardownPolicy's as its ServiceAccount, identity.go), in the namespace
// and with the selectors it always reads, so no object of another tenant
// ever reaches it.
type stepWatch struct {
	registry *waits.Registry
	target   queuekey.Request
	owner    string
}

// watchDependencies registers step i of pol, run under finalizer key, as
// waiting on resources for t, before they are read (so no change between
// the read and the registration goes unseen). nil when steps poll (no
// Runner.Waits).
func (r *Runner) watchDependencies(pol *policy.Policy, key string, i int, t Object, resources []teardownv1alpha1.ResourceSelector) (*stepWatch, error) {
	if r.Waits == nil {
		return nil, nil
	}
	deps := make([]waits.Dependency, 0, len(resources))
	for _, res := range resources {
		sc, err := r.listOptions(pol, res, t)
		if err != nil {
			return nil, err
		}
		// A namespaceSelector with labels watches every namespace: a
		// change elsewhere only wakes the step, which reads its own.
		scope := (&client.ListOptions{}).ApplyOptions(sc.opts)
		deps = append(deps, waits.Dependency{GVK: sc.gvk, Namespace: scope.Namespace, Selector: scope.LabelSelector})
	}
	w := &stepWatch{
		registry: r.Waits,
		target:   queuekey.For(t.GVK, client.ObjectKeyFromObject(t.Obj)),
		owner:    pol.Ref.String() + " step " + pol.Steps[i].Name,
	}
	r.Waits.Register(w.target, w.owner, deps, pollInterval, r.timeLeft(pol, key, i, t))
	return w, nil
}

// timeLeft is how long step i of pol has until its timeout, plus a second
// so the run that comes then finds it passed; 0 when it has none. Its start
// is read from the step record under key, the finalizer the cleanup runs
// under (a retired key's cleanup keeps its own record); a step with no
// record of its start (its first run) counts from now.
func (r *Runner) timeLeft(pol *policy.Policy, key string, i int, t Object) time.Duration {
	timeout := pol.Steps[i].Timeout
	if timeout == nil || timeout.Duration <= 0 {
		return 0
	}
	now := r.now()
	since := now
	if pos := r.Records.Resume(t.Obj, pol, key, now); pos.Index == i && !pos.Since.IsZero() {
		since = pos.Since
	}
	return max(timeout.Duration-now.Sub(since)+time.Second, time.Second)
}

// finish applies the registration to the step's outcome: a step that is no
// longer pending is forgotten; a pending one needs no requeue (after 0),
// since the registry runs it again when a dependency changes, and at the
// latest after the safety net (every dependency watched) or the poll
// interval (not all watched), or at its timeout.
//
// No requeue, rather than a requeue after the safety net: the finalizer
// library holds a pending cleanup back until the check-again time it
// records from a requeue (pkg/finalizer, waitBeforeNextAttempt), which
// would hold back every wake too.
func (w *stepWatch) finish(out outcome) outcome {
	switch {
	case w == nil:
	case out.done || out.err != nil:
		w.registry.Forget(w.target, w.owner)
	default:
		out.after = 0
	}
	return out
}
