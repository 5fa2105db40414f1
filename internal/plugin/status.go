/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// StatusOptions is `kubectl teardown status`.
type StatusOptions struct {
	genericiooptions.IOStreams
	clusterOptions

	Output *outputFlags
	// AllNamespaces is -A: every namespace and the cluster-scoped kinds.
	AllNamespaces bool
	// Selector is -l, a label selector on the objects listed.
	Selector string
	Watch    bool
	Interval time.Duration
	Workers  int
	// StuckAfter, when set, makes status exit with ExitBlocked if an
	// object has been Terminating for longer (pods: past their grace
	// period).
	StuckAfter time.Duration
	// ExitBlocked makes status exit with ExitBlocked when explain's
	// analysis finds a blocker for a listed object.
	ExitBlocked bool

	// namespace is the one namespace listed; "" with -A.
	namespace string
	selector  labels.Selector
	Now       func() time.Time
}

// StatusRow is one Terminating object.
type StatusRow struct {
	Object            diagnose.ObjectRef `json:"object"`
	DeletionTimestamp metav1.Time        `json:"deletionTimestamp"`
	TerminatingFor    string             `json:"terminatingFor"`
	Finalizers        []string           `json:"finalizers,omitempty"`
	Blocker           string             `json:"blocker"`
	Progress          []record.Progress  `json:"progress,omitempty"`
	// Stuck is set with --stuck-after when the object has been Terminating
	// for longer than that.
	Stuck bool `json:"stuck,omitempty"`
	// Blocked is true when explain's analysis finds a blocker; Cause is the
	// first root blocker's cause, and RootBlockers are explain's (without
	// the removal dry-runs, which only explain makes).
	Blocked bool `json:"blocked,omitempty"`
	// Stalled is true when nothing blocks it and nothing shows it
	// progressing (explain's STALLED); Cause is then Stalled.
	Stalled      bool               `json:"stalled,omitempty"`
	Cause        string             `json:"cause,omitempty"`
	RootBlockers []diagnose.Finding `json:"rootBlockers,omitempty"`
}

// StatusReport is status's -o json|yaml output.
type StatusReport struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Items      []StatusRow `json:"items"`
	// Errors are lists that failed (forbidden kinds); the rest is still shown.
	Errors []string `json:"errors,omitempty"`
	// StuckAfter is the --stuck-after threshold, and Stuck how many items
	// exceed it.
	StuckAfter string `json:"stuckAfter,omitempty"`
	Stuck      int    `json:"stuck,omitempty"`
	// Blocked is how many items have a blocker.
	Blocked int `json:"blocked,omitempty"`
	// Stalled is how many items are stalled: no blocker, no progress.
	Stalled int `json:"stalled,omitempty"`
}

// NewStatusCommand builds `status`.
func NewStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newStatusCommand(newStatusOptions(flags, streams))
}

func newStatusOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *StatusOptions {
	return &StatusOptions{IOStreams: streams, clusterOptions: clusterOptions{flags: flags}, Now: time.Now, Output: newOutputFlags(true, outputWide)}
}

func newStatusCommand(o *StatusOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List the Terminating objects of a namespace (or -A), with their age and a one-line blocker",
		Long: `Status lists the objects being deleted, how long each has been terminating, and
a one-line blocker. Like kubectl get, it lists one namespace: -n, or else the
kubeconfig context's namespace; a terminating namespace is listed with what it
still holds. -A lists every namespace and also the cluster-scoped kinds (Nodes,
PersistentVolumes, CRDs, ...), which belong to no namespace. -l keeps the objects
whose labels match. It uses metadata-only lists of the kinds that can be deleted,
in parallel, and never writes. With --watch it then watches those kinds and
redraws when a deletion starts, changes or ends (Teardown policy steps included),
at most every --interval, and at least every 30s.

Output goes through kubectl's printers: a table (-o wide adds the finalizers and
the API version; --no-headers drops the header line), -o name, and -o json, yaml,
jsonpath=... or go-template=... over the StatusReport schema (docs/cli.md).
Warnings (kinds that could not be listed) and the --stuck-after summary go to
stderr, so stdout stays parseable.

Each object's BLOCKER is what explain finds, without its removal dry-runs: the
first root blocker (and how many more), or what the object waits on and whether
that is alive; the kinds, pods, events and Leases it needs are listed once for
the whole listing, not once per object.

With --stuck-after it exits with code 3 when something has been Terminating for
longer than that (pods: counted from the end of their grace period), for scripts
and monitoring; with --exit-blocked, when something has a blocker, however long
it has been Terminating.`,
		Example: `  kubectl teardown status
  kubectl teardown status -A
  kubectl teardown status -n shop --watch
  kubectl teardown status -A -l app.kubernetes.io/part-of=shop -o wide
  kubectl teardown status -A -o name
  kubectl teardown status -A -o jsonpath='{range .items[*]}{.object.kind}/{.object.name}{"\t"}{.blocker}{"\n"}{end}'
  kubectl teardown status -A --stuck-after 15m || alert "deletions are stuck"
  kubectl teardown status -A --exit-blocked || alert "a deletion is blocked"`,
		Args: usageArgs(cobra.NoArgs),
		RunE: runE(o),
	}
	o.Output.addFlags(cmd, "a table", true)
	cmd.Flags().BoolVarP(&o.AllNamespaces, flagAllNamespaces, "A", false, "list every namespace and the cluster-scoped kinds; -n is then ignored")
	cmd.Flags().StringVarP(&o.Selector, flagSelector, "l", "", "label selector to filter on, as kubectl's (e.g. -l 'app=web,tier!=cache')")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "redraw when a deletion changes (one watch per kind, no lists in between), until interrupted")
	cmd.Flags().DurationVar(&o.Interval, "interval", 2*time.Second, "with --watch, the shortest time between two frames (one is drawn at least every 30s)")
	cmd.Flags().IntVar(&o.Workers, "workers", 16, "lists in flight")
	cmd.Flags().DurationVar(&o.StuckAfter, "stuck-after", 0, "exit with code 3 if an object has been Terminating for longer than this (e.g. 5m; 0: never)")
	cmd.Flags().BoolVar(&o.ExitBlocked, flagExitBlocked, false, "exit with code 3 if explain's analysis finds a blocker for a listed object, however long it has been Terminating")
	return cmd
}

// Complete builds the clients and picks the namespace, without an API call.
func (o *StatusOptions) Complete(cmd *cobra.Command, _ []string) error {
	if err := o.complete(cmd); err != nil {
		return err
	}
	if !o.AllNamespaces {
		o.namespace = o.cluster.namespace
	}
	return nil
}

// Validate checks the flags.
func (o *StatusOptions) Validate() error {
	if o.Watch && !o.Output.isOwn() {
		return usageErrorf("--watch prints a table; it cannot be combined with -o %s", o.Output.format())
	}
	if o.Interval < 100*time.Millisecond {
		return usageErrorf("--interval must be at least 100ms")
	}
	if o.StuckAfter < 0 {
		return usageErrorf("--stuck-after must not be negative")
	}
	if o.Watch && o.StuckAfter > 0 {
		return usageErrorf("--stuck-after sets the exit code of one listing; it cannot be combined with --watch")
	}
	if o.Watch && o.ExitBlocked {
		return usageErrorf("--%s sets the exit code of one listing; it cannot be combined with --watch", flagExitBlocked)
	}
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return usageErrorf("invalid --%s %q: %v", flagSelector, o.Selector, err)
	}
	o.selector = sel
	return o.Output.validate()
}

// watchRedraw is how often status --watch redraws with nothing changed, so
// that the ages and the diagnosis stay current.
const watchRedraw = 30 * time.Second

// Run lists, prints, and with --watch repeats: on a change a watch saw
// (an object starts being deleted, or one being deleted changes or goes),
// at most every --interval, and at least every watchRedraw.
func (o *StatusOptions) Run(ctx context.Context) error {
	color, err := useColor(o.Color, o.ErrOut)
	if err != nil {
		return err
	}
	var changes <-chan struct{}
	if o.Watch {
		changes = o.watchDeletions(ctx)
	}
	for {
		rep, err := o.collect(ctx)
		if o.Watch && ctx.Err() != nil {
			// Interrupted mid-refresh: the last complete frame stands.
			return nil
		}
		if err != nil {
			return err
		}
		markStuck(rep, o.Now(), o.StuckAfter)
		if o.Watch {
			fmt.Fprintf(o.Out, "%s\n", o.Now().Format(time.TimeOnly))
		}
		if err := o.print(rep, diagnose.Palette{On: color}); err != nil {
			return err
		}
		if !o.Watch {
			if err := stuckExit(rep); err != nil {
				return err
			}
			return o.blockedExit(rep)
		}
		drawn := time.Now()
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		case <-time.After(watchRedraw):
		}
		// Changes come in bursts (a namespace's deletion): one frame for
		// the burst, no sooner than --interval after the last.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(drawn.Add(o.Interval))):
		}
		select {
		case <-changes:
		default:
		}
		fmt.Fprintln(o.Out)
	}
}

// watchDeletions watches the kinds status lists, and namespaces, for
// deletions (kube.Cluster.Deletions, which leaves out the cluster-scoped
// kinds when a namespace is given, as ListMeta does).
func (o *StatusOptions) watchDeletions(ctx context.Context) <-chan struct{} {
	resources, _ := o.cluster.read.Resources()
	return o.cluster.read.Deletions(ctx, deletable(resources), o.namespace, o.Selector)
}

// markStuck flags the items Terminating for longer than threshold (none
// when it is 0). A pod's deletionTimestamp is the end of its grace period,
// so a pod counts from there.
func markStuck(rep *StatusReport, now time.Time, threshold time.Duration) {
	if threshold <= 0 {
		return
	}
	rep.StuckAfter = diagnose.ShortDuration(threshold)
	rep.Stuck = 0
	for i := range rep.Items {
		it := &rep.Items[i]
		it.Stuck = now.Sub(it.DeletionTimestamp.Time) > threshold
		if it.Stuck {
			rep.Stuck++
		}
	}
}

// stuckExit is ExitBlocked when markStuck found something.
func stuckExit(rep *StatusReport) error {
	if rep.Stuck > 0 {
		return errBlocked
	}
	return nil
}

// deletable keeps the kinds whose objects can be Terminating: listable and
// deletable, minus Events (recreated constantly, never finalized) and
// duplicates of a kind served by two groups.
func deletable(rs []kube.APIResource) []kube.APIResource {
	var out []kube.APIResource
	for _, r := range rs {
		if !slices.Contains(r.Verbs, "delete") || r.GVR.Resource == "events" {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (o *StatusOptions) collect(ctx context.Context) (*StatusReport, error) {
	now := o.Now()
	rep := &StatusReport{APIVersion: diagnose.ReportAPIVersion, Kind: "StatusReport", Items: []StatusRow{}}
	resources, partial := o.cluster.read.Resources()
	if resources == nil && partial != nil {
		return nil, partial
	}
	if partial != nil {
		rep.Errors = append(rep.Errors, partial.Error())
	}
	// Namespaces are read in full: their conditions name the blocker. With
	// one namespace, only that one is read, so a user who may not list
	// namespaces can still see their own.
	var namespaces []corev1.Namespace
	if o.namespace == "" {
		list, err := o.cluster.read.Namespaces(ctx, o.Selector)
		if err != nil {
			return nil, fmt.Errorf("listing namespaces: %w", err)
		}
		namespaces = list
	} else {
		ns, err := o.cluster.read.Namespace(ctx, o.namespace)
		switch {
		case err == nil:
			if o.selector == nil || o.selector.Matches(labels.Set(ns.Labels)) {
				namespaces = []corev1.Namespace{*ns}
			}
		case apierrors.IsNotFound(err):
		case apierrors.IsForbidden(err):
			rep.Errors = append(rep.Errors, fmt.Sprintf("reading namespace %s: %v", o.namespace, err))
		default:
			return nil, fmt.Errorf("reading namespace %s: %w", o.namespace, err)
		}
	}
	var rs []kube.APIResource
	for _, r := range deletable(resources) {
		if r.GVR.Group == "" && r.GVR.Resource == "namespaces" {
			continue
		}
		if o.namespace != "" && !r.Namespaced {
			continue
		}
		rs = append(rs, r)
	}
	items, errs := o.cluster.read.ListMeta(ctx, rs, o.namespace, o.Selector, o.Workers)
	for _, err := range errs {
		rep.Errors = append(rep.Errors, err.Error())
	}
	engine := o.engine(items, errs)
	var jobs []diagnosis
	// kube-controller-manager's Lease, read at most once, and only when
	// something waits on one of its controllers.
	var kcm *diagnose.ControllerLiveness
	controllerManager := func() diagnose.ControllerLiveness {
		if kcm == nil {
			l := diagnose.ControllerManagerLiveness(ctx, o.cluster.read, now)
			kcm = &l
		}
		return *kcm
	}
	for _, it := range items {
		if it.Obj.DeletionTimestamp == nil {
			continue
		}
		blocker, keep := diagnose.ObjectBlocker(it.Res.Kind, &it.Obj, now), false
		if fin, component := diagnose.ControllerManagerFinalizer(it.Res.Kind, it.Obj.Finalizers); fin != "" {
			if l := controllerManager(); l.Stopped() {
				blocker, keep = fmt.Sprintf("%s: %s stopped: %s (run explain)", fin, component, l.Short()), true
			}
		}
		jobs = append(jobs, diagnosis{row: len(rep.Items), keep: keep, obj: &it.Obj,
			target: diagnose.Target{GVR: it.Res.GVR, GVK: it.Res.GVR.GroupVersion().WithKind(it.Res.Kind), Namespaced: it.Res.Namespaced, Namespace: it.Obj.Namespace, Name: it.Obj.Name}})
		rep.Items = append(rep.Items, StatusRow{Object: diagnose.ItemRef(it), DeletionTimestamp: *it.Obj.DeletionTimestamp,
			TerminatingFor: diagnose.Age(now.Sub(it.Obj.DeletionTimestamp.Time)), Finalizers: it.Obj.Finalizers,
			Blocker: blocker, Progress: record.ReadProgress(&it.Obj)})
	}
	for i := range namespaces {
		ns := &namespaces[i]
		if ns.DeletionTimestamp == nil {
			continue
		}
		fins := append([]string{}, ns.Finalizers...)
		for _, f := range ns.Spec.Finalizers {
			fins = append(fins, "spec:"+string(f))
		}
		blocker, keep := diagnose.NamespaceBlocker(ns, now), false
		for _, f := range ns.Spec.Finalizers {
			if f != corev1.FinalizerKubernetes {
				continue
			}
			if l := controllerManager(); l.Stopped() {
				blocker, keep = "kubernetes: namespace controller stopped: "+l.Short()+" (run explain)", true
			}
		}
		if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ns); err == nil {
			jobs = append(jobs, diagnosis{row: len(rep.Items), keep: keep, obj: &unstructured.Unstructured{Object: u},
				target: diagnose.Target{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Name: ns.Name}})
		}
		rep.Items = append(rep.Items, StatusRow{Object: diagnose.ObjectRef{APIVersion: "v1", Kind: "Namespace", Resource: "namespaces", Name: ns.Name, UID: string(ns.UID)},
			DeletionTimestamp: *ns.DeletionTimestamp, TerminatingFor: diagnose.Age(now.Sub(ns.DeletionTimestamp.Time)), Finalizers: fins,
			Blocker: blocker})
	}
	o.diagnose(ctx, engine, now, rep, jobs)
	sort.Slice(rep.Items, func(i, j int) bool {
		a, b := rep.Items[i], rep.Items[j]
		if !a.DeletionTimestamp.Equal(&b.DeletionTimestamp) {
			return a.DeletionTimestamp.Before(&b.DeletionTimestamp)
		}
		return a.Object.String() < b.Object.String()
	})
	return rep, nil
}

// print writes rep in the -o format: the table and -o name on stdout, the
// rest through kubectl's printers; warnings and the --stuck-after summary
// on stderr.
func (o *StatusOptions) print(rep *StatusReport, p diagnose.Palette) error {
	var err error
	switch format := o.Output.format(); {
	case o.Output.isOwn():
		if len(rep.Items) == 0 {
			fmt.Fprintln(o.ErrOut, o.nothing())
			break
		}
		table := statusTable(rep, o.namespace == "")
		err = printers.NewTablePrinter(printers.PrintOptions{NoHeaders: o.Output.NoHeaders, Wide: format == outputWide}).PrintObj(table, o.Out)
	case format == outputName:
		var np printers.ResourcePrinter
		if np, err = o.Output.namePrinter(); err != nil {
			return err
		}
		for _, it := range rep.Items {
			obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: it.Object.APIVersion, Kind: it.Object.Kind},
				ObjectMeta: metav1.ObjectMeta{Namespace: it.Object.Namespace, Name: it.Object.Name}}
			if err = np.PrintObj(obj, o.Out); err != nil {
				return err
			}
		}
	default:
		err = o.Output.printReport(o.Out, rep.APIVersion, rep.Kind, rep)
	}
	if err != nil {
		return err
	}
	renderStatusNotes(o.ErrOut, rep, p)
	if o.ExitBlocked && rep.Blocked+rep.Stalled > 0 {
		fmt.Fprintf(o.ErrOut, "%s %d object(s) held by a blocker, %d stalled (kubectl teardown explain TYPE/NAME shows the chain)\n", p.Red("blocked:"), rep.Blocked, rep.Stalled)
	}
	return nil
}

// nothing is the empty listing's line, as kubectl's "No resources found".
func (o *StatusOptions) nothing() string {
	if o.namespace != "" {
		return "Nothing is terminating in namespace " + o.namespace + "."
	}
	return "Nothing is terminating."
}

// statusTable is the table of rep; the NAMESPACE column only with -A, as in
// kubectl get. Columns of priority 1 are shown by -o wide.
func statusTable(rep *StatusReport, withNamespace bool) *metav1.Table {
	t := &metav1.Table{}
	if withNamespace {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Namespace", Type: "string"})
	}
	t.ColumnDefinitions = append(t.ColumnDefinitions,
		metav1.TableColumnDefinition{Name: "Kind", Type: "string"},
		metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name"},
		metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: "how long it has been Terminating"},
		metav1.TableColumnDefinition{Name: "Blocker", Type: "string"},
		metav1.TableColumnDefinition{Name: "Finalizers", Type: "string", Priority: 1},
		metav1.TableColumnDefinition{Name: "APIVersion", Type: "string", Priority: 1},
	)
	for _, r := range rep.Items {
		var cells []any
		if withNamespace {
			ns := r.Object.Namespace
			if ns == "" {
				ns = "-"
			}
			cells = append(cells, ns)
		}
		fins := strings.Join(r.Finalizers, ",")
		if fins == "" {
			fins = "<none>"
		}
		cells = append(cells, r.Object.Kind, r.Object.Name, r.TerminatingFor, r.Blocker, fins, r.Object.APIVersion)
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t
}

// renderStatusNotes writes what is not a row, for people: the
// --stuck-after summary and the kinds that could not be listed.
func renderStatusNotes(w io.Writer, rep *StatusReport, p diagnose.Palette) {
	if rep.Stuck > 0 {
		fmt.Fprintf(w, "%s %d object(s) Terminating for more than %s\n", p.Red("stuck:"), rep.Stuck, rep.StuckAfter)
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "%s %s\n", p.Yellow("warning:"), e)
	}
}
