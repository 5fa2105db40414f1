/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// PlanWait is what a wait or delete step of a policy would wait for if the
// object were deleted now: the objects one of its resources selects, in the
// namespaces the controller would look in, listed with the user's
// credentials.
type PlanWait struct {
	// Finalizer and Step name the policy's finalizer and the step.
	Finalizer string `json:"finalizer"`
	Step      string `json:"step"`
	// Action is wait or delete.
	Action string `json:"action"`
	// APIVersion and Kind are the resource's kind.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Scope says where the step looks: "namespace shop", "every
	// namespace", "namespaces matching team=red", "cluster-wide".
	Scope string `json:"scope"`
	// OnlyDeleting: a wait step with include Deleting, which waits only for
	// the objects being deleted.
	OnlyDeleting bool `json:"onlyDeleting,omitempty"`
	// Objects are the objects selected now (those being deleted only, when
	// OnlyDeleting).
	Objects []PlanWaitObject `json:"objects,omitempty"`
	// Error says why they could not be listed; Objects is then unknown.
	Error string `json:"error,omitempty"`
}

// PlanWaitObject is an object a step would wait for.
type PlanWaitObject struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Terminating: it is being deleted already.
	Terminating bool `json:"terminating,omitempty"`
}

var policyResources = []schema.GroupVersionResource{
	teardownv1alpha1.GroupVersion.WithResource("teardownpolicies"),
	teardownv1alpha1.GroupVersion.WithResource("clusterteardownpolicies"),
}

// stepPolicy is a policy's spec, by the finalizer it uses.
type stepPolicy struct {
	namespace string // a TeardownPolicy's; "" for a ClusterTeardownPolicy
	spec      teardownv1alpha1.TeardownPolicySpec
}

// policiesByFinalizer reads the policies (cached for the run) whose steps
// include a wait or delete step, by finalizer key.
func policiesByFinalizer(ctx context.Context, c *kube.Cluster) map[string]stepPolicy {
	out := map[string]stepPolicy{}
	for _, gvr := range policyResources {
		list, err := c.Objects(ctx, gvr, "")
		if err != nil {
			continue
		}
		for _, p := range list {
			var pol teardownv1alpha1.ClusterTeardownPolicy // the spec and status are alike
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(p.Object, &pol); err != nil {
				continue
			}
			key := pol.Spec.Finalizer
			if key == "" {
				key = pol.Status.Finalizer
			}
			if key != "" && hasResourceSteps(pol.Spec.Steps) {
				out[key] = stepPolicy{namespace: p.GetNamespace(), spec: pol.Spec}
			}
		}
	}
	return out
}

func hasResourceSteps(steps []teardownv1alpha1.Step) bool {
	for _, s := range steps {
		if s.Wait != nil || s.Delete != nil {
			return true
		}
	}
	return false
}

// addWaits fills in, for each object of rep a policy's wait or delete steps
// would run for, the objects those steps would wait for now.
func addWaits(ctx context.Context, c *kube.Cluster, rep *PlanReport, policies map[string]stepPolicy) {
	if len(policies) == 0 {
		return
	}
	resources, _ := c.Resources()
	var walk func(n *PlanNode)
	walk = func(n *PlanNode) {
		for _, f := range n.Finalizers {
			if p, ok := policies[f]; ok {
				n.Waits = append(n.Waits, planWaits(ctx, c, resources, f, p, n.Object)...)
			}
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	walk(&rep.Root)
}

// planWaits lists, for each resource of p's wait and delete steps, what it
// selects for obj.
func planWaits(ctx context.Context, c *kube.Cluster, resources []kube.APIResource, fin string, p stepPolicy, obj diagnose.ObjectRef) []PlanWait {
	var out []PlanWait
	for _, s := range p.spec.Steps {
		var list []teardownv1alpha1.ResourceSelector
		w := PlanWait{Finalizer: fin, Step: s.Name}
		switch {
		case s.Wait != nil:
			list, w.Action, w.OnlyDeleting = s.Wait.Resources, "wait", s.Wait.Include == teardownv1alpha1.WaitIncludeDeleting
		case s.Delete != nil:
			list, w.Action = s.Delete.Resources, "delete"
		default:
			continue
		}
		for _, res := range list {
			w := w
			w.APIVersion, w.Kind = res.APIVersion, res.Kind
			if err := w.fill(ctx, c, resources, p, res, obj); err != nil {
				w.Error = err.Error()
			}
			out = append(out, w)
		}
	}
	return out
}

// fill lists the objects res selects for obj, as the controller would look
// for them.
func (w *PlanWait) fill(ctx context.Context, c *kube.Cluster, resources []kube.APIResource, p stepPolicy, res teardownv1alpha1.ResourceSelector, obj diagnose.ObjectRef) error {
	gv, err := schema.ParseGroupVersion(res.APIVersion)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(resources, func(r kube.APIResource) bool {
		return r.GVR.GroupVersion() == gv && r.Kind == res.Kind && !strings.Contains(r.GVR.Resource, "/")
	})
	if i < 0 {
		return fmt.Errorf("%s %s is not served by the API server", res.APIVersion, res.Kind)
	}
	ns, namespaces, scope, err := waitScope(p, res, resources[i].Namespaced, obj)
	if err != nil {
		return err
	}
	w.Scope = scope
	sel, err := metav1.LabelSelectorAsSelector(res.Selector)
	if err != nil {
		return fmt.Errorf("selector: %w", err)
	}
	in := func(string) bool { return true }
	if namespaces != nil {
		list, err := c.Namespaces(ctx, namespaces.String())
		if err != nil {
			return fmt.Errorf("listing the namespaces of its namespaceSelector: %w", err)
		}
		set := map[string]bool{}
		for _, n := range list {
			set[n.Name] = true
		}
		in = func(ns string) bool { return set[ns] }
	}
	items, errs := c.ListMeta(ctx, []kube.APIResource{resources[i]}, ns, sel.String(), 1)
	if len(errs) > 0 {
		return errs[0]
	}
	for _, it := range items {
		terminating := it.Obj.DeletionTimestamp != nil
		if !in(it.Obj.Namespace) || w.OnlyDeleting && !terminating {
			continue
		}
		w.Objects = append(w.Objects, PlanWaitObject{Namespace: it.Obj.Namespace, Name: it.Obj.Name, Terminating: terminating})
	}
	sort.Slice(w.Objects, func(i, j int) bool {
		return w.Objects[i].Namespace+"/"+w.Objects[i].Name < w.Objects[j].Namespace+"/"+w.Objects[j].Name
	})
	return nil
}

// waitScope is where the controller looks for res, of a namespaced kind or
// not, on behalf of target: the namespace to list ("" for all), the
// namespaces whose objects count (nil: all listed), and how to say it. It
// follows the controller's own rule (steps' listOptions).
func waitScope(p stepPolicy, res teardownv1alpha1.ResourceSelector, namespaced bool, target diagnose.ObjectRef) (ns string, namespaces labels.Selector, scope string, err error) {
	switch {
	case p.namespace != "":
		return p.namespace, nil, "namespace " + p.namespace, nil
	case !namespaced:
		return "", nil, "cluster-wide", nil
	case res.NamespaceSelector != nil:
		sel, err := metav1.LabelSelectorAsSelector(res.NamespaceSelector)
		if err != nil {
			return "", nil, "", fmt.Errorf("namespaceSelector: %w", err)
		}
		if sel.Empty() {
			return "", nil, "every namespace", nil
		}
		return "", sel, "namespaces matching " + sel.String(), nil
	case target.Namespace != "":
		return target.Namespace, nil, "namespace " + target.Namespace, nil
	case target.APIVersion == "v1" && target.Kind == "Namespace":
		return target.Name, nil, "namespace " + target.Name, nil
	default:
		return "", nil, "every namespace", nil
	}
}

// summary is the plan's line for w.
func (w *PlanWait) summary() string {
	what := "waits until no " + w.Kind + " is left"
	if w.Action == "delete" {
		what = "deletes every " + w.Kind + " it selects and waits until none is left"
	} else if w.OnlyDeleting {
		what = "waits for the " + w.Kind + " objects being deleted"
	}
	head := what + " in " + w.Scope
	if w.Error != "" {
		return head + "; " + w.Error
	}
	if len(w.Objects) == 0 {
		return head + "; none now"
	}
	var names []string
	idle := 0
	for _, o := range w.Objects {
		name := o.Name
		if o.Namespace != "" {
			name = o.Namespace + "/" + o.Name
		}
		names = append(names, name)
		if !o.Terminating {
			idle++
		}
	}
	sort.Strings(names)
	const shown = 10
	if len(names) > shown {
		names = append(names[:shown], fmt.Sprintf("%d more", len(names)-shown))
	}
	text := fmt.Sprintf("%s; now %d: %s", head, len(w.Objects), strings.Join(names, ", "))
	if idle > 0 && w.Action == "wait" {
		text += fmt.Sprintf(" (%d not being deleted: they hold it until someone deletes them)", idle)
	}
	return text
}
