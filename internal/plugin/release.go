/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// AuditAnnotation is set on the object (while it still exists) by release,
// in the same patch that removes the finalizer. Its value is a JSON object
// naming the finalizer ("finalizer":"<key>") and the reason: the
// ValidatingAdmissionPolicy of config/admission lets a Teardown finalizer be
// removed by someone other than the controller only when the request writes
// this annotation anew, naming the removed key (docs/admission.md).
const AuditAnnotation = record.ReleasedAnnotation

const (
	flagFinalizer       = "finalizer"
	flagReason          = "reason"
	flagYes             = "yes"
	flagForce           = "force"
	flagAuditLog        = "audit-log"
	flagResourceVersion = "resource-version"
	flagDryRun          = "dry-run"
	flagOrphaned        = "orphaned"
)

// ReleaseOptions is `kubectl teardown release`.
type ReleaseOptions struct {
	genericiooptions.IOStreams
	targetOptions

	Finalizer       string
	Reason          string
	Yes             bool
	Force           bool
	AuditLog        string
	ResourceVersion string
	// DryRun is --dry-run as kubectl users type it: none (the default: a
	// dry-run unless --yes or confirmed on a terminal), or server or client,
	// both meaning this command's dry-run, which always checks the exact
	// write on the server and never writes or prompts.
	DryRun string
	// Orphaned releases, in the namespace, every finalizer explain finds
	// owned by nothing (release_orphaned.go).
	Orphaned bool
	// requireCause, when set, applies only while explain's finding for the
	// finalizer still has this cause (the bulk release re-checks each one).
	requireCause string

	Now func() time.Time
	// beforeApply runs between the evidence and the write; tests use it to
	// change the object in that window.
	beforeApply func()
	// interactive reports whether In is a terminal to prompt on.
	interactive func() bool
}

// NewReleaseCommand builds `release`.
func NewReleaseCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newReleaseCommand(newReleaseOptions(flags, streams))
}

func newReleaseOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *ReleaseOptions {
	o := &ReleaseOptions{IOStreams: streams, targetOptions: targetOptions{clusterOptions: clusterOptions{flags: flags}}, Now: time.Now}
	o.interactive = func() bool {
		f, ok := o.In.(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
	return o
}

func newReleaseCommand(o *ReleaseOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release TYPE/NAME --finalizer KEY --reason TEXT",
		Short: "Remove one finalizer safely: dry-run first, evidence shown, audited",
		Long: `Release removes one finalizer from one object. By default it is a dry-run: it shows
the evidence (who owns the finalizer, whether that owner is alive, what removing it
leaks) and checks the exact patch with a server-side dry-run. It writes only with
--yes, or after typing the finalizer's name on a terminal.

The write is a JSON patch guarded by test operations on the finalizer and on the
resourceVersion the evidence was gathered at, so a change in between makes it fail
safely. A namespace's spec.finalizers tokens go through /finalize with a
resourceVersion precondition. Every applied release is recorded on the object
(annotation ` + AuditAnnotation + `) and in a local audit log.

The CRD cleanup finalizer and a namespace's kubernetes token are refused without
--force, and --force prints what will be orphaned.

--orphaned (with -n, instead of TYPE/NAME and --finalizer) releases, in one
namespace, every finalizer explain finds owned by nothing, each as above.`,
		Example: `  kubectl teardown release configmap/cfg -n shop --finalizer example.com/cleanup --reason "operator uninstalled, bucket deleted by hand"
  kubectl teardown release namespace/shop --finalizer openshift.io/origin --reason "OpenShift 3 leftover" --yes
  kubectl teardown release --orphaned -n shop --reason "leftovers of an uninstalled tool"`,
		Args:              usageArgs(cobra.RangeArgs(0, 2)),
		ValidArgsFunction: completeTypeName(o.flags),
		RunE:              runE(o),
	}
	cmd.Flags().StringVar(&o.Finalizer, flagFinalizer, "", "the finalizer to remove (required)")
	cmd.Flags().StringVar(&o.Reason, flagReason, "", "why, for the audit record (required)")
	cmd.Flags().BoolVarP(&o.Yes, flagYes, "y", false, "apply without asking (otherwise a dry-run, or a prompt on a terminal)")
	cmd.Flags().BoolVar(&o.Force, flagForce, false, "allow the dangerous finalizers (CRD cleanup, namespace kubernetes) and objects not being deleted")
	cmd.Flags().StringVar(&o.AuditLog, flagAuditLog, defaultAuditLog(), "local JSON-lines audit log")
	cmd.Flags().StringVar(&o.DryRun, flagDryRun, "none", `"server" or "client": only show the evidence and the server-side dry-run of the exact write, never write or prompt (both check on the server); "none": the default`)
	// A bare --dry-run means a dry-run, as kubectl's did.
	cmd.Flags().Lookup(flagDryRun).NoOptDefVal = "server"
	cmd.Flags().StringVar(&o.ResourceVersion, flagResourceVersion, "", "apply only if the object is still at this resourceVersion (the one a dry-run showed)")
	cmd.Flags().BoolVar(&o.Orphaned, flagOrphaned, false, "instead of TYPE/NAME and --finalizer: every finalizer that explain finds owned by nothing (OrphanFinalizer) on the objects being deleted in the namespace, each with its own evidence, dry-run and audit record")
	// Checked before any API call, by cobra and again by Validate.
	_ = cmd.MarkFlagRequired(flagReason)
	return cmd
}

func defaultAuditLog() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "kubectl-teardown-audit.jsonl"
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "kubectl-teardown", "audit.jsonl")
}

// Complete reads the arguments and builds the clients, without an API call.
func (o *ReleaseOptions) Complete(cmd *cobra.Command, args []string) error {
	if o.Orphaned {
		if len(args) > 0 {
			return usageErrorf("--%s releases what it finds in the namespace: give no TYPE/NAME", flagOrphaned)
		}
		return o.clusterOptions.complete(cmd)
	}
	return o.complete(cmd, args)
}

// Validate checks the flags.
func (o *ReleaseOptions) Validate() error {
	switch {
	case o.Orphaned && o.Finalizer != "":
		return usageErrorf("--%s finds the finalizers itself: give no --%s", flagOrphaned, flagFinalizer)
	case o.Orphaned && (o.Force || o.ResourceVersion != ""):
		return usageErrorf("--%s takes neither --%s nor --%s", flagOrphaned, flagForce, flagResourceVersion)
	case !o.Orphaned && o.Finalizer == "":
		return usageErrorf("--%s is required", flagFinalizer)
	}
	if strings.TrimSpace(o.Reason) == "" {
		return usageErrorf("--%s is required: say why, for the audit record", flagReason)
	}
	switch o.DryRun {
	case "none", "server", "client":
	default:
		return usageErrorf("--%s=%s: use server, client or none", flagDryRun, o.DryRun)
	}
	if o.Yes && o.dryRunOnly() {
		return usageErrorf("--%s and --%s=%s contradict each other: choose one", flagYes, flagDryRun, o.DryRun)
	}
	return nil
}

// dryRunOnly reports whether --dry-run forbids the write.
func (o *ReleaseOptions) dryRunOnly() bool { return o.DryRun == "server" || o.DryRun == "client" }

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time            time.Time              `json:"time"`
	User            string                 `json:"user,omitempty"`
	Cluster         string                 `json:"cluster"`
	Object          diagnose.ObjectRef     `json:"object"`
	ResourceVersion string                 `json:"resourceVersion"`
	Finalizer       string                 `json:"finalizer"`
	Location        string                 `json:"location"`
	Reason          string                 `json:"reason"`
	Forced          bool                   `json:"forced,omitempty"`
	Evidence        *diagnose.Finding      `json:"evidence,omitempty"`
	DryRun          *diagnose.RemovalCheck `json:"dryRun,omitempty"`
	Result          string                 `json:"result"`
	// After is the object's state after the write: "deleted" or its
	// remaining finalizers.
	After string `json:"after,omitempty"`
}

// Run shows the evidence, dry-runs, and applies on confirmation.
func (o *ReleaseOptions) Run(ctx context.Context) error {
	if o.Orphaned {
		return o.runOrphaned(ctx)
	}
	color, err := useColor(o.Color, o.Out)
	if err != nil {
		return err
	}
	p := diagnose.Palette{On: color}
	if o.target, err = o.cluster.resolve(o.typ, o.name); err != nil {
		return err
	}
	ex := diagnose.NewExplainer(o.cluster.read, o.Now())
	obj, err := o.cluster.read.GetObject(ctx, o.target.GVR, o.target.Namespace, o.target.Name)
	if err != nil {
		return err
	}
	rv := obj.GetResourceVersion()
	if o.ResourceVersion != "" && o.ResourceVersion != rv {
		return fmt.Errorf("%s changed since the dry-run (resourceVersion %s, now %s): nothing applied; run the dry-run again", o.target.Ref(), o.ResourceVersion, rv)
	}
	ref := o.target.Ref()
	ref.UID = string(obj.GetUID())

	location, index := "", -1
	if o.target.IsNamespace() {
		spec, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers")
		for i, f := range spec {
			if f == o.Finalizer {
				location, index = "spec", i
			}
		}
	}
	if location == "" {
		for i, f := range obj.GetFinalizers() {
			if f == o.Finalizer {
				location, index = "metadata", i
				break
			}
		}
	}
	if location == "" {
		return fmt.Errorf("%s has no finalizer %q (it has %v)", ref, o.Finalizer, obj.GetFinalizers())
	}
	if obj.GetDeletionTimestamp() == nil && !o.Force {
		return fmt.Errorf("%s is not being deleted: its owner would add %q again; refusing without --%s", ref, o.Finalizer, flagForce)
	}
	dangerous := (o.Finalizer == "customresourcecleanup.apiextensions.k8s.io" && o.target.GVK.Kind == "CustomResourceDefinition") ||
		(location == "spec" && o.Finalizer == string(corev1.FinalizerKubernetes))

	// Evidence: explain's finding for this very finalizer.
	rep, err := ex.Explain(ctx, o.target)
	if err != nil {
		return err
	}
	var evidence *diagnose.Finding
	for i := range rep.Findings {
		if rep.Findings[i].Finalizer == o.Finalizer {
			evidence = &rep.Findings[i]
			break
		}
	}
	fmt.Fprintf(o.Out, "%s %q from %s (resourceVersion %s, %s finalizers)\n", p.Bold("Release"), o.Finalizer, ref, rv, location)
	if evidence != nil {
		fmt.Fprintln(o.Out, "\nEvidence:")
		var b strings.Builder
		diagnose.RenderFinding(&b, evidence, "  ", "  ", p)
		fmt.Fprint(o.Out, b.String())
	}
	if dangerous {
		fmt.Fprintf(o.Out, "\n%s removing %q by hand is what the folklore does, and it orphans data:\n", p.Red("DANGER:"), o.Finalizer)
		orphans := o.wouldOrphan(ctx, ex, obj)
		for i, s := range orphans {
			if i == 50 {
				fmt.Fprintf(o.Out, "  ... and %d more\n", len(orphans)-50)
				break
			}
			fmt.Fprintf(o.Out, "  will orphan: %s\n", s)
		}
		if len(orphans) == 0 {
			fmt.Fprintln(o.Out, "  nothing found to orphan right now")
		}
		if !o.Force {
			return fmt.Errorf("refusing to remove %q without --%s: fix the blockers explain shows instead", o.Finalizer, flagForce)
		}
	}

	// Dry-run of the exact write.
	check := o.dryRun(ctx, obj, location, index, rv)
	if check.Allowed {
		fmt.Fprintf(o.Out, "\nServer-side dry-run of the exact write: %s\n", p.Green("accepted"))
	} else {
		fmt.Fprintf(o.Out, "\nServer-side dry-run of the exact write: %s: %s\n", p.Red("rejected"), check.Error)
	}
	if evidence != nil && evidence.Leaks != "" {
		fmt.Fprintf(o.Out, "Removing it leaks: %s\n", evidence.Leaks)
	}
	fmt.Fprintln(o.Out, "Finalizers cannot be added back to an object being deleted: this cannot be undone.")
	if !check.Allowed {
		return fmt.Errorf("the API server rejects the removal; fix that first (see the dry-run error)")
	}
	if o.requireCause != "" && (evidence == nil || evidence.Cause != o.requireCause) {
		cause := "none"
		if evidence != nil {
			cause = evidence.Cause
		}
		return fmt.Errorf("%w: explain's finding for %q is now %s, not %s: nothing applied", errNoLongerCertain, o.Finalizer, cause, o.requireCause)
	}

	if !o.Yes {
		if o.dryRunOnly() || !o.interactive() {
			fmt.Fprintf(o.Out, "\nDry-run: nothing changed. To apply exactly this, run:\n  kubectl teardown release %s --finalizer %s --reason %q --resource-version %s --yes\n", diagnose.TargetArg(ref), o.Finalizer, o.Reason, rv)
			return nil
		}
		fmt.Fprintf(o.Out, "\nType the finalizer's name to remove it: ")
		line, _ := bufio.NewReader(o.In).ReadString('\n')
		if strings.TrimSpace(line) != o.Finalizer {
			fmt.Fprintln(o.Out, "Not confirmed: nothing changed.")
			return nil
		}
	}
	if o.beforeApply != nil {
		o.beforeApply()
	}
	rec := AuditRecord{Time: o.Now().UTC(), Cluster: o.cluster.host, Object: ref, ResourceVersion: rv, Finalizer: o.Finalizer,
		Location: location, Reason: o.Reason, Forced: o.Force, Evidence: evidence, DryRun: &check, User: o.whoAmI(ctx)}
	applyErr := o.apply(ctx, obj, location, index, rv, rec)
	if applyErr != nil {
		rec.Result = "failed: " + applyErr.Error()
	} else {
		rec.Result = "applied"
		rec.After = o.after(ctx)
	}
	if applyErr == nil {
		if where, err := o.auditEvent(ctx, ref, rec); err != nil {
			fmt.Fprintf(o.ErrOut, "warning: recording an Event: %v\n", err)
		} else {
			rec.After += fmt.Sprintf(" (Event in namespace %s)", where)
		}
	}
	if err := appendAudit(o.AuditLog, rec); err != nil {
		fmt.Fprintf(o.ErrOut, "warning: writing the audit log %s: %v\n", o.AuditLog, err)
	}
	if applyErr != nil {
		return applyErr
	}
	fmt.Fprintf(o.Out, "\nReleased %q from %s; now: %s. Audit record: %s\n", o.Finalizer, ref, rec.After, o.AuditLog)
	return nil
}

// auditEvent records the release as a Warning Event on the object, in its
// namespace, or in default when that namespace is being deleted (no Event can
// be created in a Terminating namespace).
func (o *ReleaseOptions) auditEvent(ctx context.Context, ref diagnose.ObjectRef, rec AuditRecord) (string, error) {
	where := ref.Namespace
	if where == "" || (o.target.IsNamespace()) {
		where = metav1.NamespaceDefault
	} else if ns, err := o.cluster.read.Namespace(ctx, where); err != nil || ns.DeletionTimestamp != nil {
		where = metav1.NamespaceDefault
	}
	now := metav1.NewTime(rec.Time)
	involved := corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
		UID: types.UID(ref.UID), ResourceVersion: rec.ResourceVersion}
	if ref.Namespace != "" && where != ref.Namespace {
		// An Event must live in its object's namespace: point it at the
		// (cluster-scoped) Namespace instead, as kubernetes#70916 suggests.
		involved = corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ref.Namespace}
	}
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: "kubectl-teardown-release-", Namespace: where},
		InvolvedObject:      involved,
		Reason:              record.ReasonFinalizerReleased,
		Message:             diagnose.Shorten(fmt.Sprintf("kubectl teardown released %q from %s (by %s): %s", rec.Finalizer, ref, unknownIfEmpty(rec.User), rec.Reason), 1024),
		Type:                corev1.EventTypeWarning,
		Source:              corev1.EventSource{Component: "kubectl-teardown"},
		ReportingController: "teardown.dev/kubectl-teardown",
		ReportingInstance:   unknownIfEmpty(rec.User),
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	if _, err := o.cluster.kube.CoreV1().Events(where).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	return where, nil
}

// wouldOrphan lists what a forced removal of a dangerous finalizer leaves.
func (o *ReleaseOptions) wouldOrphan(ctx context.Context, ex *diagnose.Explainer, obj *unstructured.Unstructured) []string {
	var out []string
	if o.target.IsNamespace() {
		resources, _ := o.cluster.read.Resources()
		items, _ := o.cluster.read.ListMeta(ctx, resources, obj.GetName(), "", 8)
		for _, it := range items {
			if it.Res.GVR.Resource != "events" {
				out = append(out, diagnose.ItemRef(it).String())
			}
		}
		return out
	}
	for _, ref := range ex.CRDInstances(ctx, obj) {
		out = append(out, ref.String())
	}
	return out
}

// auditValue is the annotation value left on the object.
func auditValue(rec AuditRecord) string {
	v, _ := json.Marshal(map[string]string{"finalizer": rec.Finalizer, "reason": rec.Reason, "user": rec.User, "time": rec.Time.Format(time.RFC3339)})
	return string(v)
}

// removal is the guarded patch of record.RemovalPatch for the finalizer at
// index, pinned to rv, carrying released in AuditAnnotation: the patch the
// library applies and explain dry-runs, keeping the attached record, which
// only the controller may change.
func (o *ReleaseOptions) removal(obj *unstructured.Unstructured, index int, rv, released string) ([]byte, error) {
	return record.RemovalPatch(obj, record.Removal{Finalizer: o.Finalizer, Index: index, Group: o.target.GVR.Group, KeepAttached: true, ResourceVersion: rv, Released: released})
}

func (o *ReleaseOptions) dryRun(ctx context.Context, obj *unstructured.Unstructured, location string, index int, rv string) diagnose.RemovalCheck {
	var err error
	if location == "spec" {
		ns, cerr := o.finalizeBody(obj, "")
		if cerr != nil {
			return diagnose.RemovalCheck{Error: cerr.Error()}
		}
		err = o.cluster.read.DryRunFinalize(ctx, ns)
	} else {
		patch, perr := o.removal(obj, index, rv, record.ReleasedDryRun(o.Finalizer, o.Reason))
		if perr != nil {
			return diagnose.RemovalCheck{Error: perr.Error()}
		}
		err = o.cluster.read.DryRunRemoval(ctx, o.target.GVR, o.target.Namespace, obj.GetName(), patch)
	}
	if err != nil {
		return diagnose.RemovalCheck{Error: err.Error()}
	}
	return diagnose.RemovalCheck{Allowed: true}
}

// finalizeBody is the namespace without the token, at the read
// resourceVersion (the precondition), with the audit annotation.
func (o *ReleaseOptions) finalizeBody(obj *unstructured.Unstructured, audit string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ns); err != nil {
		return nil, err
	}
	var keep []corev1.FinalizerName
	for _, f := range ns.Spec.Finalizers {
		if string(f) != o.Finalizer {
			keep = append(keep, f)
		}
	}
	ns.Spec.Finalizers = keep
	if audit != "" {
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		ns.Annotations[AuditAnnotation] = audit
	}
	return ns, nil
}

func (o *ReleaseOptions) resource() dynamicResource {
	r := o.cluster.dyn.Resource(o.target.GVR)
	if o.target.Namespaced {
		return r.Namespace(o.target.Namespace)
	}
	return r
}

func (o *ReleaseOptions) apply(ctx context.Context, obj *unstructured.Unstructured, location string, index int, rv string, rec AuditRecord) error {
	audit := auditValue(rec)
	if location == "spec" {
		ns, err := o.finalizeBody(obj, audit)
		if err != nil {
			return err
		}
		err = o.cluster.kube.CoreV1().RESTClient().Put().Resource("namespaces").Name(ns.Name).SubResource("finalize").Body(ns).Do(ctx).Error()
		if apierrors.IsConflict(err) {
			return fmt.Errorf("namespace %s changed since the evidence was gathered (resourceVersion %s): nothing applied; run again: %w", ns.Name, rv, err)
		}
		if err != nil {
			return fmt.Errorf("finalizing namespace %s: %w", ns.Name, err)
		}
		return nil
	}
	patch, err := o.removal(obj, index, rv, audit)
	if err != nil {
		return err
	}
	_, err = o.resource().Patch(ctx, obj.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-teardown"})
	if apierrors.IsInvalid(err) || apierrors.IsConflict(err) || (err != nil && strings.Contains(err.Error(), "test operation")) {
		return fmt.Errorf("%s changed since the evidence was gathered (resourceVersion %s): nothing applied; run again: %w", o.target.Ref(), rv, err)
	}
	if err != nil {
		return fmt.Errorf("removing %q: %w", o.Finalizer, err)
	}
	return nil
}

func (o *ReleaseOptions) after(ctx context.Context) string {
	obj, err := o.resource().Get(ctx, o.target.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "deleted"
	}
	if err != nil {
		return "unknown: " + err.Error()
	}
	fins := obj.GetFinalizers()
	if o.target.IsNamespace() {
		spec, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers")
		for _, f := range spec {
			fins = append(fins, "spec:"+f)
		}
	}
	return fmt.Sprintf("still present with finalizers %v", fins)
}

func (o *ReleaseOptions) whoAmI(ctx context.Context) string {
	r, err := o.cluster.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err == nil {
		return r.Status.UserInfo.Username
	}
	if raw, err := o.flags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		if c, ok := raw.Contexts[raw.CurrentContext]; ok {
			return c.AuthInfo
		}
	}
	return ""
}

func appendAudit(path string, rec AuditRecord) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return errors.Join(err, f.Close())
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}

var _ io.Reader

// unknownIfEmpty names an unknown user.
func unknownIfEmpty(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
