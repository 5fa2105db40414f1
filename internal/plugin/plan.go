/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Propagation policies plan understands (kubectl's --cascade values).
const (
	cascadeBackground = "background"
	cascadeForeground = "foreground"
	cascadeOrphan     = "orphan"
)

// PlanOptions is `kubectl teardown plan`.
type PlanOptions struct {
	genericiooptions.IOStreams
	targetOptions

	Output  *outputFlags
	Cascade string
	Now     func() time.Time
}

// PlanNode is one object a delete would touch.
type PlanNode struct {
	Object diagnose.ObjectRef `json:"object"`
	// Action: delete (deleted at once), hold (deleted but kept by
	// finalizers), orphan (kept, its ownerReference removed), keep (another
	// owner keeps it), terminating (already being deleted).
	Action string `json:"action"`
	// Finalizers that will hold the object, excluding the garbage
	// collector's own.
	Finalizers []string `json:"finalizers,omitempty"`
	// Steps lists the Teardown policy steps that will run, by finalizer.
	Steps []string `json:"steps,omitempty"`
	// Unused says, for each unused step among them, which pods would hold
	// the object now.
	Unused []PlanUnused `json:"unused,omitempty"`
	// Waits says, for each wait or delete step among them, which objects
	// it would wait for now (an operator's custom resources, in every
	// namespace, for an operator-last policy).
	Waits []PlanWait `json:"waits,omitempty"`
	Note  string     `json:"note,omitempty"`
	// BlocksOwner is true when the owner (foreground) waits for this node.
	BlocksOwner bool       `json:"blocksOwner,omitempty"`
	Children    []PlanNode `json:"children,omitempty"`
}

// PlanReport is plan's output.
type PlanReport struct {
	APIVersion        string   `json:"apiVersion"`
	Kind              string   `json:"kind"`
	PropagationPolicy string   `json:"propagationPolicy"`
	Root              PlanNode `json:"root"`
	Summary           struct {
		Deleted  int `json:"deleted"`
		Held     int `json:"held"`
		Orphaned int `json:"orphaned"`
		Kept     int `json:"kept"`
	} `json:"summary"`
}

// Plan actions.
const (
	actionDelete      = "delete"
	actionHold        = "hold"
	actionOrphan      = "orphan"
	actionKeep        = "keep"
	actionTerminating = "terminating"
)

// NewPlanCommand builds `plan`.
func NewPlanCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PlanOptions{IOStreams: streams, targetOptions: targetOptions{clusterOptions: clusterOptions{flags: flags}}, Now: time.Now, Output: newOutputFlags(false)}
	cmd := &cobra.Command{
		Use:   "plan TYPE/NAME",
		Short: "Show what deleting an object would do, deleting nothing",
		Long: `Plan shows what a delete would do without deleting anything: the garbage
collector's cascade tree under the chosen propagation policy, the finalizers that
will hold objects, and the Teardown policy steps that will run. For an unused
step, it names the pods that would hold the object now; for a wait or delete
step, the objects it would wait for now (in every namespace its
namespaceSelector reaches, such as an operator's custom resources). For a namespace,
everything in it is deleted (pods first).`,
		Example: `  kubectl teardown plan deployment/web -n shop
  kubectl teardown plan configmap/root -n shop --cascade=foreground -o json`,
		Args:              usageArgs(cobra.RangeArgs(1, 2)),
		ValidArgsFunction: completeTypeName(flags),
		RunE:              runE(o),
	}
	o.Output.addFlags(cmd, "a tree", false)
	cmd.Flags().StringVar(&o.Cascade, "cascade", cascadeBackground, "propagation policy: background, foreground or orphan")
	return cmd
}

// Complete reads the arguments and builds the clients, without an API call.
func (o *PlanOptions) Complete(cmd *cobra.Command, args []string) error {
	return o.complete(cmd, args)
}

// Validate checks the flags.
func (o *PlanOptions) Validate() error {
	switch o.Cascade {
	case cascadeBackground, cascadeForeground, cascadeOrphan:
	default:
		return usageErrorf("unknown --cascade %q: use background, foreground or orphan", o.Cascade)
	}
	return o.Output.validate()
}

// Run builds and prints the plan.
func (o *PlanOptions) Run(ctx context.Context) error {
	var err error
	if o.target, err = o.cluster.resolve(o.typ, o.name); err != nil {
		return err
	}
	obj, err := o.cluster.read.GetObject(ctx, o.target.GVR, o.target.Namespace, o.target.Name)
	if err != nil {
		return err
	}
	scope := obj.GetNamespace()
	if o.target.IsNamespace() {
		scope = obj.GetName()
	}
	resources, _ := o.cluster.read.Resources()
	items, _ := o.cluster.read.ListMeta(ctx, resources, scope, "", 8)
	steps := map[string][]string{}
	policies := diagnose.Policies(ctx, o.cluster.read)
	for _, p := range policies {
		steps[p.Finalizer] = p.Steps
	}
	rootRef := o.target.Ref()
	rootRef.UID = string(obj.GetUID())
	root := kube.MetaItem{Res: kube.APIResource{GVR: o.target.GVR, Kind: o.target.GVK.Kind, Namespaced: o.target.Namespaced}}
	root.Obj.ObjectMeta = metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(), Finalizers: obj.GetFinalizers(), DeletionTimestamp: obj.GetDeletionTimestamp(), OwnerReferences: obj.GetOwnerReferences()}
	var rep *PlanReport
	if o.target.IsNamespace() {
		rep = buildNamespacePlan(root, items, steps)
	} else {
		rep = buildPlan(root, items, o.Cascade, steps)
	}
	addUnused(ctx, o.cluster.read, rep, unusedPolicies(policies))
	addWaits(ctx, o.cluster.read, rep, policiesByFinalizer(ctx, o.cluster.read))
	if !o.Output.isOwn() {
		return o.Output.printReport(o.Out, rep.APIVersion, rep.Kind, rep)
	}
	color, err := useColor(o.Color, o.Out)
	if err != nil {
		return err
	}
	renderPlan(o.Out, rep, diagnose.Palette{On: color})
	return nil
}

// gcFinalizer reports the garbage collector's own finalizers.
func gcFinalizer(f string) bool { return f == "foregroundDeletion" || f == "orphan" }

func planNode(it kube.MetaItem, steps map[string][]string) PlanNode {
	n := PlanNode{Object: diagnose.ItemRef(it), Action: actionDelete}
	for _, f := range it.Obj.Finalizers {
		if gcFinalizer(f) {
			continue
		}
		n.Finalizers = append(n.Finalizers, f)
		if s, ok := steps[f]; ok {
			n.Steps = append(n.Steps, fmt.Sprintf("%s: %s", f, strings.Join(s, " → ")))
		}
	}
	if len(n.Finalizers) > 0 {
		n.Action = actionHold
	}
	if it.Obj.DeletionTimestamp != nil {
		n.Action = actionTerminating
		n.Note = "already being deleted"
	}
	return n
}

// buildPlan is the garbage collector's cascade from root over items, under
// policy. Pure: tests feed it objects.
func buildPlan(root kube.MetaItem, items []kube.MetaItem, policy string, steps map[string][]string) *PlanReport {
	children := map[types.UID][]kube.MetaItem{}
	byUID := map[types.UID]kube.MetaItem{}
	for _, it := range items {
		byUID[it.Obj.UID] = it
		for _, r := range it.Obj.OwnerReferences {
			children[r.UID] = append(children[r.UID], it)
		}
	}
	rep := &PlanReport{APIVersion: diagnose.ReportAPIVersion, Kind: "PlanReport", PropagationPolicy: policy}
	deleted := map[types.UID]bool{root.Obj.UID: true}
	var build func(it kube.MetaItem, policy string, depth int) PlanNode
	build = func(it kube.MetaItem, policy string, depth int) PlanNode {
		n := planNode(it, steps)
		count(rep, n.Action)
		if depth > 20 {
			return n
		}
		kids := children[it.Obj.UID]
		sort.Slice(kids, func(i, j int) bool { return diagnose.ItemRef(kids[i]).String() < diagnose.ItemRef(kids[j]).String() })
		for _, k := range kids {
			if deleted[k.Obj.UID] {
				continue
			}
			if policy == cascadeOrphan {
				c := PlanNode{Object: diagnose.ItemRef(k), Action: actionOrphan, Note: "kept; the garbage collector removes its ownerReference (finalizer orphan on the owner until done)"}
				count(rep, c.Action)
				n.Children = append(n.Children, c)
				continue
			}
			// A dependent with another live owner only loses this reference.
			var other string
			for _, r := range k.Obj.OwnerReferences {
				if r.UID != it.Obj.UID && r.UID != k.Obj.UID && !deleted[r.UID] {
					if _, ok := byUID[r.UID]; ok {
						other = fmt.Sprintf("%s %s", r.Kind, r.Name)
					}
				}
			}
			if other != "" {
				c := PlanNode{Object: diagnose.ItemRef(k), Action: actionKeep, Note: "kept: another owner remains (" + other + ")"}
				count(rep, c.Action)
				n.Children = append(n.Children, c)
				continue
			}
			deleted[k.Obj.UID] = true
			c := build(k, policy, depth+1)
			for _, r := range k.Obj.OwnerReferences {
				if r.UID == it.Obj.UID && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion && policy == cascadeForeground {
					c.BlocksOwner = true
				}
			}
			switch policy {
			case cascadeForeground:
				if c.BlocksOwner {
					c.Note = joinNote(c.Note, "deleted first: its owner waits for it (blockOwnerDeletion)")
				} else {
					c.Note = joinNote(c.Note, "deleted first (foreground), but its owner does not wait for it")
				}
			default:
				c.Note = joinNote(c.Note, "deleted by the garbage collector after its owner is gone")
			}
			n.Children = append(n.Children, c)
		}
		return n
	}
	rep.Root = build(root, policy, 0)
	switch policy {
	case cascadeForeground:
		rep.Root.Note = joinNote(rep.Root.Note, "gets foregroundDeletion and stays until its blocking dependents are gone")
	case cascadeOrphan:
		rep.Root.Note = joinNote(rep.Root.Note, "gets orphan; its dependents are kept")
	}
	return rep
}

// buildNamespacePlan: everything in the namespace goes, pods first.
func buildNamespacePlan(root kube.MetaItem, items []kube.MetaItem, steps map[string][]string) *PlanReport {
	rep := &PlanReport{APIVersion: diagnose.ReportAPIVersion, Kind: "PlanReport", PropagationPolicy: cascadeBackground}
	rep.Root = planNode(root, steps)
	rep.Root.Finalizers = append(rep.Root.Finalizers, "spec:kubernetes")
	rep.Root.Action = actionHold
	rep.Root.Note = "the namespace controller deletes pods first, then everything else, then removes spec:kubernetes"
	count(rep, actionHold)
	var pods, rest []PlanNode
	for _, it := range items {
		if it.Res.GVR.Resource == "events" {
			continue
		}
		n := planNode(it, steps)
		count(rep, n.Action)
		if it.Res.GVR.Group == "" && it.Res.GVR.Resource == "pods" {
			n.Note = joinNote(n.Note, "phase 1: pods first")
			pods = append(pods, n)
		} else {
			n.Note = joinNote(n.Note, "phase 2: after the pods")
			rest = append(rest, n)
		}
	}
	rep.Root.Children = append(pods, rest...)
	return rep
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func count(rep *PlanReport, action string) {
	switch action {
	case actionDelete:
		rep.Summary.Deleted++
	case actionHold, actionTerminating:
		rep.Summary.Held++
	case actionOrphan:
		rep.Summary.Orphaned++
	case actionKeep:
		rep.Summary.Kept++
	}
}

func renderPlan(w io.Writer, rep *PlanReport, p diagnose.Palette) {
	fmt.Fprintf(w, "Plan: delete %s with propagationPolicy=%s (nothing is deleted by this command)\n\n", p.Bold(rep.Root.Object.String()), strings.Title(rep.PropagationPolicy)) //nolint:staticcheck // ASCII words
	var b strings.Builder
	renderPlanNode(&b, &rep.Root, "", "", p)
	fmt.Fprint(w, b.String())
	fmt.Fprintf(w, "\n%d deleted at once, %d held by finalizers, %d orphaned, %d kept\n", rep.Summary.Deleted, rep.Summary.Held, rep.Summary.Orphaned, rep.Summary.Kept)
}

func renderPlanNode(b *strings.Builder, n *PlanNode, first, rest string, p diagnose.Palette) {
	action := n.Action
	switch n.Action {
	case actionHold, actionTerminating:
		action = p.Yellow(action)
	case actionOrphan, actionKeep:
		action = p.Green(action)
	default:
		action = p.Red(action)
	}
	fmt.Fprintf(b, "%s%s %s", first, action, n.Object)
	if len(n.Finalizers) > 0 {
		fmt.Fprintf(b, "  held by %s", strings.Join(n.Finalizers, ", "))
	}
	b.WriteString("\n")
	if n.Note != "" {
		fmt.Fprintf(b, "%s    %s\n", rest, p.Dim(n.Note))
	}
	for _, s := range n.Steps {
		fmt.Fprintf(b, "%s    %s %s\n", rest, p.Dim("teardown steps:"), s)
	}
	for _, u := range n.Unused {
		fmt.Fprintf(b, "%s    %s %s\n", rest, p.Dim("unused step "+u.Step+":"), u.summary())
	}
	for _, w := range n.Waits {
		fmt.Fprintf(b, "%s    %s %s\n", rest, p.Dim(w.Action+" step "+w.Step+":"), w.summary())
	}
	for i := range n.Children {
		branch, cont := "├─ ", "│  "
		if i == len(n.Children)-1 {
			branch, cont = "└─ ", "   "
		}
		renderPlanNode(b, &n.Children[i], rest+branch, rest+cont, p)
	}
}
