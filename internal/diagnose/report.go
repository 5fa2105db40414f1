/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// ReportAPIVersion versions the JSON/YAML schema of explain's output; it
// changes only when a field changes meaning or goes away (docs/cli.md).
const ReportAPIVersion = "cli.teardown.dev/v1alpha1"

// Severities of a Finding.
const (
	// SeverityBlocker: this holds the deletion back.
	SeverityBlocker = "blocker"
	// SeverityWaiting: something is in progress and expected to finish.
	SeverityWaiting = "waiting"
	// SeverityWarning: not blocking now, but a trap (dangling owners, leaks).
	SeverityWarning = "warning"
	// SeverityInfo: context.
	SeverityInfo = "info"
)

// Causes (the Cause constants) are declared by family, in the file of their
// check. They are stable identifiers: scripts match on them, so one never
// changes its value.

// ObjectRef names an object in a report.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Resource is the plural resource name, as in `kubectl get <resource>`.
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// String is "Kind namespace/name".
func (r ObjectRef) String() string {
	if r.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
	}
	return fmt.Sprintf("%s %s", r.Kind, r.Name)
}

// Owner is who is expected to remove a finalizer.
type Owner struct {
	// Component is a human name: "garbage collector (kube-controller-manager)",
	// "cert-manager", "TeardownPolicy shop/dns".
	Component string `json:"component,omitempty"`
	// Source says how the owner was found: catalog, policy, managedFields,
	// crdGroup, apiServiceGroup, or none.
	Source string `json:"source"`
	// Manager is the managedFields manager that added the finalizer, if known.
	Manager string `json:"manager,omitempty"`
	// State: alive, down (found but not running), missing (expected workload
	// not found), unknown.
	State string `json:"state"`
	// Confidence in who the remover is: certain (the writer of the
	// finalizer runs in Workload and its ServiceAccount may write the
	// object; or Teardown, or the control plane), likely (one signal, none
	// against it), unknown (signals disagree or name nothing found). Only a
	// certain owner's finding offers to remove the finalizer by hand.
	Confidence string `json:"confidence,omitempty"`
	// Workload is the Deployment/StatefulSet/DaemonSet/Pod found for it.
	Workload *ObjectRef `json:"workload,omitempty"`
	// ServiceAccount (namespace/name) the workload runs as; its RBAC is
	// checked with a SubjectAccessReview (B4).
	ServiceAccount string   `json:"serviceAccount,omitempty"`
	Evidence       []string `json:"evidence,omitempty"`
}

// Owner states.
const (
	OwnerAlive   = "alive"
	OwnerDown    = "down"
	OwnerMissing = "missing"
	OwnerUnknown = "unknown"
)

// Owner sources.
const (
	SourceCatalog    = "catalog"
	SourcePolicy     = "policy"
	SourceManager    = "managedFields"
	SourceCRDGroup   = "crdGroup"
	SourceAPIService = "apiServiceGroup"
	SourceNone       = "none"
)

// RemovalCheck is the result of a server-side dry-run of the exact patch
// that would remove a finalizer.
type RemovalCheck struct {
	Allowed bool   `json:"allowed"`
	Error   string `json:"error,omitempty"`
}

// Finding is one node of the explanation tree.
type Finding struct {
	Cause    string `json:"cause"`
	Catalog  string `json:"catalog,omitempty"`
	Severity string `json:"severity"`
	// Object is what the finding is about.
	Object *ObjectRef `json:"object,omitempty"`
	// Finalizer is set on findings about one finalizer.
	Finalizer string `json:"finalizer,omitempty"`
	// Location is metadata or spec (a namespace's spec.finalizers).
	Location string           `json:"location,omitempty"`
	Owner    *Owner           `json:"owner,omitempty"`
	Progress *record.Progress `json:"progress,omitempty"`
	Removal  *RemovalCheck    `json:"removalDryRun,omitempty"`
	Message  string           `json:"message"`
	FixOwner string           `json:"fixOwner,omitempty"`
	Remedy   string           `json:"remedy,omitempty"`
	// Leaks says what removing the finalizer by hand would leave behind.
	Leaks string `json:"leaks,omitempty"`
	// Root is true for the root blockers of a chain.
	Root     bool      `json:"root,omitempty"`
	Children []Finding `json:"children,omitempty"`
}

// Report is explain's output.
type Report struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Target     ObjectRef `json:"target"`
	// Absent is true when the target does not exist; Findings then say
	// what the cluster remembers of it (Events, its namespace).
	Absent bool `json:"absent,omitempty"`
	// Unreadable is true when the target cannot be read: kube-apiserver
	// cannot read it from storage (a corrupt object, F1), or a GET of it
	// fails for another reason (its CRD's conversion, its APIService, F3).
	Unreadable bool `json:"unreadable,omitempty"`
	// Access says, for an unreadable target, what a read and a dry-run
	// write did at each version it is served at.
	Access []VersionAccess `json:"access,omitempty"`
	// Terminating is true when the target has a deletionTimestamp.
	Terminating       bool         `json:"terminating"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
	// TerminatingFor is how long it has been terminating, rounded.
	TerminatingFor string `json:"terminatingFor,omitempty"`
	// Blocked is true when at least one blocker was found.
	Blocked bool `json:"blocked"`
	// Verdict is Blocked, Stalled or Progressing for a Terminating object
	// (verdict.go): Progressing only with ProgressEvidence.
	Verdict string `json:"verdict,omitempty"`
	// ProgressEvidence is what shows a deletion with no blocker progressing:
	// a bounded wait with its deadline, or a recent change.
	ProgressEvidence []string `json:"progressEvidence,omitempty"`
	// Checked and NotReadable say, for a deletion with no blocker, what was
	// looked at and what could not be read.
	Checked     []string `json:"checked,omitempty"`
	NotReadable []string `json:"notReadable,omitempty"`
	// Finalizers remaining on the target; spec ones are prefixed "spec:".
	Finalizers []string  `json:"finalizers,omitempty"`
	Findings   []Finding `json:"findings,omitempty"`
	// RootBlockers are the leaves to fix first, copied from Findings.
	RootBlockers []Finding `json:"rootBlockers,omitempty"`
	// Controllers are the control-plane controllers findings wait on, with
	// their liveness from their leader-election Lease.
	Controllers []ControllerLiveness `json:"controllers,omitempty"`
}

// WalkFindings calls fn on every finding, depth first.
func WalkFindings(fs []Finding, fn func(f *Finding)) {
	for i := range fs {
		fn(&fs[i])
		WalkFindings(fs[i].Children, fn)
	}
}

// MarkRoots flags blocker findings that have no blocker below them, and
// returns them (without children) in tree order. A running owner's missing
// right to remove the same finalizer (ownerRBAC, rbacBeside) sits beside
// its finding, not below it: it never hides the cause the finding names.
func MarkRoots(fs []Finding) []Finding {
	var roots []Finding
	var visit func(f *Finding) bool
	visit = func(f *Finding) bool {
		childBlocks := false
		for i := range f.Children {
			if visit(&f.Children[i]) && !besideParent(f, &f.Children[i]) {
				childBlocks = true
			}
		}
		if f.Severity != SeverityBlocker {
			return childBlocks
		}
		if !childBlocks {
			f.Root = true
			r := *f
			r.Children = nil
			roots = append(roots, r)
		}
		return true
	}
	for i := range fs {
		visit(&fs[i])
	}
	return roots
}

// besideParent says whether child is its parent's owner's missing right to
// remove the same finalizer of the same object.
func besideParent(parent, child *Finding) bool {
	return child.Cause == CauseOwnerLacksRBAC && child.Finalizer == parent.Finalizer && child.Finalizer != "" &&
		child.Object != nil && parent.Object != nil && child.Object.UID == parent.Object.UID && child.Object.Name == parent.Object.Name
}

// sortFindings orders findings by severity, then cause, then object.
func sortFindings(fs []Finding) {
	rank := map[string]int{SeverityBlocker: 0, SeverityWaiting: 1, SeverityWarning: 2, SeverityInfo: 3}
	sort.SliceStable(fs, func(i, j int) bool { return rank[fs[i].Severity] < rank[fs[j].Severity] })
}

// ItemRef names the object of a metadata list.
func ItemRef(m kube.MetaItem) ObjectRef {
	return ObjectRef{APIVersion: m.Res.APIVersion(), Kind: m.Res.Kind, Resource: m.Res.GVR.Resource, Namespace: m.Obj.Namespace, Name: m.Obj.Name, UID: string(m.Obj.UID)}
}
