/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/diagnose/kube/kubefake"
)

// familyNow is the clock of the family tests.
var familyNow = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// familyExplainer is an Explainer over kubefake holding docs (YAML), whose
// SubjectAccessReviews deny the ServiceAccounts named helper only.
func familyExplainer(t *testing.T, docs ...string) *Explainer {
	t.Helper()
	objs := make([]runtime.Object, 0, len(docs))
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatalf("fixture: %v", err)
		}
		objs = append(objs, u)
	}
	c, f := kubefake.New(t, objs...)
	f.Kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: !strings.HasSuffix(sar.Spec.User, ":helper")}}, nil
	})
	return NewExplainer(c, familyNow)
}

// familySubject is the object under test, as the walk hands it over.
func familySubject(t *testing.T, doc string, resource string) subject {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	gvk := u.GroupVersionKind()
	return subject{GVR: gvk.GroupVersion().WithResource(resource), GVK: gvk, Obj: u}
}

// familyScenario is one stuck (or progressing) deletion of the families'
// table: its thread, the target, what the cluster holds, what the finding
// said before the passes, and what they find.
type familyScenario struct {
	thread   string
	target   string
	resource string
	cause    string // of the finding, before the passes
	message  string // the owner's words, before the passes
	cluster  []string
	want     []string // cause and object of each finding
	// root is the first root blocker explain reports ("" for none), and
	// was before the passes.
	root, rootBefore string
	// verdict is explain's verdict when no root blocker is found
	// (Progressing only with evidence, else Stalled); Blocked otherwise.
	verdict string
	// also is a cause the walk must report somewhere in the tree.
	also string
}

// familyScenarios are one scenario of each wired family of issue 26 (from
// the real threads of the families' table tests, internal/diagnose/signals)
// and deletions that must not be called blocked.
func familyScenarios() map[string]familyScenario {
	ago := func(d time.Duration) string { return familyNow.Add(-d).Format(time.RFC3339) }
	return map[string]familyScenario{
		"family 1: a Crossplane claim paused, Ready=True": {
			root: "ObjectPaused", rootBefore: "",
			thread:   "https://github.com/crossplane/crossplane/issues/4839",
			target:   `{apiVersion: example.org/v1alpha1, kind: PostgresInstance, metadata: {name: db, namespace: example, uid: pg-1, deletionTimestamp: "` + ago(time.Hour) + `", annotations: {crossplane.io/paused: "true"}, finalizers: [finalizer.apiextensions.crossplane.io]}, status: {conditions: [{type: Ready, status: "True"}, {type: Synced, status: "False", reason: ReconcilePaused}]}}`,
			resource: "postgresinstances",
			want:     []string{"ObjectPaused PostgresInstance example/db"},
		},
		"family 2: a GatewayClass in use by a Gateway of another namespace": {
			root: "InUseBy", rootBefore: "",
			thread:   "https://github.com/tigera/operator/pull/5292",
			target:   `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: tigera-gateway-class, uid: gc-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [gateway-exists-finalizer.gateway.networking.k8s.io]}}`,
			resource: "gatewayclasses",
			cluster: []string{
				`{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: web, namespace: shop, uid: g-1}, spec: {gatewayClassName: tigera-gateway-class}}`,
			},
			want: []string{"InUseBy Gateway shop/web"},
		},
		"family 3: a Karmada Work whose member cluster is not Ready": {
			root: "RemoverPlaceUnavailable", rootBefore: "",
			thread:   "https://github.com/karmada-io/karmada/issues/3740",
			target:   `{apiVersion: work.karmada.io/v1alpha1, kind: Work, metadata: {name: nginx-687f7fb96f, namespace: karmada-es-member1, uid: w-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [karmada.io/execution-controller]}}`,
			resource: "works",
			cluster: []string{
				`{apiVersion: cluster.karmada.io/v1alpha1, kind: Cluster, metadata: {name: member1}, status: {conditions: [{type: Ready, status: "False", reason: ClusterNotReachable, message: "cluster is not reachable"}]}}`,
			},
			want: []string{"RemoverPlaceUnavailable Cluster member1"},
		},
		"family 5: a provisioner's helper pod forbidden, confirmed by a SubjectAccessReview": {
			root: "HelperFailed", rootBefore: "OwnerReportsFailure",
			thread: "https://github.com/rancher/local-path-provisioner/issues/181",
			target: `{apiVersion: local.example.io/v1, kind: Volume, metadata: {name: pvc-47c7, uid: v-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [local.example.io/data]},
  status: {conditions: [{type: Ready, status: "False", reason: DeleteFailed, message: "failed to delete volume pvc-47c7: pod local-path-storage/helper-pod-delete-pvc-47c7 failed"}]}}`,
			resource: "volumes",
			cause:    CauseOwnerReportsFailure,
			message:  "the owner says: failed to delete volume pvc-47c7: pod local-path-storage/helper-pod-delete-pvc-47c7 failed",
			cluster: []string{
				`{apiVersion: v1, kind: Pod, metadata: {name: helper-pod-delete-pvc-47c7, namespace: local-path-storage}, spec: {serviceAccountName: helper, containers: [{name: h, image: busybox}]},
  status: {phase: Failed, containerStatuses: [{name: h, state: {terminated: {exitCode: 1, message: "volumes.local.example.io \"pvc-47c7\" is forbidden: User \"system:serviceaccount:local-path-storage:helper\" cannot patch resource \"volumes\" in API group \"local.example.io\" at the cluster scope"}}}]}}`,
			},
			want: []string{"HelperFailed Pod local-path-storage/helper-pod-delete-pvc-47c7: a SubjectAccessReview confirms it may not"},
		},
		"family 6: a RabbitMQ User whose credentials Secret went with its namespace": {
			root: "NeedGoneWithNamespace", rootBefore: "",
			thread:   "https://github.com/rabbitmq/messaging-topology-operator/issues/277",
			target:   `{apiVersion: rabbitmq.com/v1beta1, kind: User, metadata: {name: my-fav-user, namespace: test, uid: u-1, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [deletion.finalizers.users.rabbitmq.com]}, spec: {importCredentialsSecret: {name: test-creds}}}`,
			resource: "users",
			cluster: []string{
				`{apiVersion: v1, kind: Namespace, metadata: {name: test, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [kubernetes]}, status: {phase: Terminating}}`,
				`{apiVersion: v1, kind: Secret, metadata: {name: other, namespace: test}}`,
			},
			want: []string{"NeedGoneWithNamespace Secret test/test-creds"},
		},
		"family 7: the same Warning for three days, nothing else": {
			// Through the walk the Warning is the owner's words (the only
			// finalizer's); the recurrence is said below them.
			root: "OwnerReportsFailure", rootBefore: "OwnerReportsFailure", also: CauseRecurringFailure,
			thread:   "https://github.com/kubermatic/kubermatic/issues/7148",
			target:   `{apiVersion: example.org/v1alpha1, kind: PostgresInstance, metadata: {name: stuck, namespace: example, uid: pg-2, deletionTimestamp: "` + ago(72*time.Hour) + `", finalizers: [example.org/cleanup]}}`,
			resource: "postgresinstances",
			cluster: []string{
				`{apiVersion: v1, kind: Event, metadata: {name: stuck.1, namespace: example}, type: Warning, reason: ReconcilingError, message: "no new finalizers can be added if the object is being deleted", count: 812,
  firstTimestamp: "` + ago(72*time.Hour) + `", lastTimestamp: "` + ago(time.Minute) + `", involvedObject: {kind: PostgresInstance, namespace: example, name: stuck, uid: pg-2}}`,
			},
			want: []string{"RecurringFailure PostgresInstance example/stuck"},
		},
		"progressing: a Work whose member cluster is Ready, its Applied condition changed since the deletion": {
			root: "", rootBefore: "", verdict: VerdictProgressing,
			thread:   "https://github.com/karmada-io/karmada/pull/1053",
			target:   `{apiVersion: work.karmada.io/v1alpha1, kind: Work, metadata: {name: w, namespace: karmada-es-member2, uid: w-2, deletionTimestamp: "` + ago(time.Minute) + `", finalizers: [karmada.io/execution-controller]}, status: {conditions: [{type: Applied, status: "False", reason: Deleting, lastTransitionTime: "` + ago(30*time.Second) + `"}]}}`,
			resource: "works",
			cluster: []string{
				`{apiVersion: cluster.karmada.io/v1alpha1, kind: Cluster, metadata: {name: member2}, status: {conditions: [{type: Ready, status: "True"}]}}`,
			},
			want: nil,
		},
		"looks progressing, is not: the same Work an hour on, member Ready, nothing changed": {
			root: "", rootBefore: "", verdict: VerdictStalled,
			thread:   "https://github.com/karmada-io/karmada/issues/3740",
			target:   `{apiVersion: work.karmada.io/v1alpha1, kind: Work, metadata: {name: w, namespace: karmada-es-member2, uid: w-3, deletionTimestamp: "` + ago(time.Hour) + `", finalizers: [karmada.io/execution-controller]}, status: {conditions: [{type: Applied, status: "True", reason: AppliedSuccessful, lastTransitionTime: "` + ago(2*time.Hour) + `"}]}}`,
			resource: "works",
			cluster: []string{
				`{apiVersion: cluster.karmada.io/v1alpha1, kind: Cluster, metadata: {name: member2}, status: {conditions: [{type: Ready, status: "True"}]}}`,
			},
			want: nil,
		},
	}
}

// TestFamilyWaits: the family passes, asked of a running owner's finalizer
// through the cluster layer on client-go's fakes.
func TestFamilyWaits(t *testing.T) {
	for name, tc := range familyScenarios() {
		t.Run(name, func(t *testing.T) {
			e := familyExplainer(t, tc.cluster...)
			s := familySubject(t, tc.target, tc.resource)
			ref := refOf(s.GVR, s.GVK, s.Obj)
			cause := tc.cause
			if cause == "" {
				cause = CauseCleanupInProgress
			}
			fd := &Finding{Cause: cause, Severity: SeverityWaiting, Object: &ref, Finalizer: s.Obj.GetFinalizers()[0], Message: tc.message,
				Owner: &Owner{Component: "its operator", State: OwnerAlive, Source: SourceManager}}
			var got []string
			for _, f := range e.familyWaits(context.Background(), fd, s) {
				g := f.Cause
				if f.Object != nil {
					g += " " + f.Object.String()
				}
				if f.Cause == CauseHelperFailed {
					_, sar, _ := strings.Cut(f.Message, "; ")
					g += ": " + strings.Split(sar, " (")[0]
				}
				got = append(got, g)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%s:\n got %q\nwant %q", tc.thread, got, tc.want)
			}
		})
	}
}

// TestPlatformNotAbsentWhenWriterRuns: family 4. A Crossplane provider runs
// its binary as the image's entrypoint argument, with no label of the
// platform's and none of its names: the platform's names miss it, what
// runs does not. It must not be called absent, nor a strip offered.
func TestPlatformNotAbsentWhenWriterRuns(t *testing.T) {
	target := `{apiVersion: helm.crossplane.io/v1beta1, kind: ProviderConfig, metadata: {name: helm-provider, uid: pc-1, deletionTimestamp: "2026-11-28T11:00:00Z", finalizers: [in-use.crossplane.io],
  managedFields: [{manager: crossplane-helm-provider, operation: Update, apiVersion: helm.crossplane.io/v1beta1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {".": {}, "v:\"in-use.crossplane.io\"": {}}}}}]}}`
	cases := map[string]struct {
		thread    string
		workloads []string
		absent    bool
	}{
		"the provider runs: not absent": {
			thread: "https://github.com/crossplane-contrib/provider-helm/issues/102",
			workloads: []string{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: helm-1a2b3c, namespace: upbound-system},
  spec: {selector: {matchLabels: {app: p}}, template: {metadata: {labels: {app: p}}, spec: {serviceAccountName: helm-1a2b3c, containers: [{name: package-runtime, image: xpkg.upbound.io/crossplane-contrib/provider-helm:v0.9.0, args: [crossplane-helm-provider, --debug]}]}}}}`},
			absent: false,
		},
		"nothing runs it: absent, as before": {
			thread: "https://github.com/crossplane/crossplane/issues/1737",
			workloads: []string{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop},
  spec: {selector: {matchLabels: {app: p}}, template: {metadata: {labels: {app: p}}, spec: {containers: [{name: web, image: nginx, args: [nginx]}]}}}}`},
			absent: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := familyExplainer(t, tc.workloads...)
			s := familySubject(t, target, "providerconfigs")
			ref := refOf(s.GVR, s.GVK, s.Obj)
			fd := &Finding{Cause: CauseOwnerUnknown, Severity: SeverityBlocker, Object: &ref, Finalizer: "in-use.crossplane.io",
				Owner: &Owner{Source: SourceManager, Manager: "crossplane-helm-provider", State: OwnerUnknown}}
			e.platformAbsent(context.Background(), fd, s)
			if got := fd.Cause == CausePlatformAbsent; got != tc.absent {
				t.Errorf("%s: absent = %v (%s: %s), want %v; evidence %q", tc.thread, got, fd.Cause, fd.Message, tc.absent, fd.Owner.Evidence)
			}
		})
	}
}

// TestExplainAsksTheFamilies: the engine's walk asks the family questions
// once the owner runs: a paused claim under a running Crossplane is not
// "cleanup in progress" but blocked by its pause mark.
func TestExplainAsksTheFamilies(t *testing.T) {
	claim := `{apiVersion: example.org/v1alpha1, kind: PostgresInstance, metadata: {name: db, namespace: example, uid: pg-1, deletionTimestamp: "2026-11-28T11:00:00Z",
  annotations: {crossplane.io/paused: "true"}, finalizers: [finalizer.apiextensions.crossplane.io],
  managedFields: [{manager: crossplane, operation: Update, apiVersion: example.org/v1alpha1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {".": {}, "v:\"finalizer.apiextensions.crossplane.io\"": {}}}}}]},
  status: {conditions: [{type: Ready, status: "True"}, {type: Synced, status: "False", reason: ReconcilePaused}]}}`
	crossplane := `{apiVersion: apps/v1, kind: Deployment, metadata: {name: crossplane, namespace: crossplane-system, labels: {app: crossplane}},
  spec: {replicas: 1, selector: {matchLabels: {app: crossplane}}, template: {metadata: {labels: {app: crossplane}}, spec: {serviceAccountName: crossplane, containers: [{name: core, image: xpkg.upbound.io/crossplane/crossplane:v1.14.0, args: [core, start]}]}}},
  status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`
	e := familyExplainer(t, claim, crossplane)
	s := familySubject(t, claim, "postgresinstances")
	rep, err := e.ExplainObject(context.Background(), Target{GVR: s.GVR, GVK: s.GVK, Namespaced: true, Namespace: "example", Name: "db"}, s.Obj)
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, r := range rep.RootBlockers {
		roots = append(roots, r.Cause)
	}
	if len(roots) == 0 || roots[0] != CauseObjectPaused {
		t.Errorf("root blockers %v, want %s first; findings %+v", roots, CauseObjectPaused, rep.Findings)
	}
}

// TestExplainFamilyScenarios: the scenarios through the engine's whole walk
// (ExplainObject), their finalizer written by an operator that runs: the
// first root blocker each gets, which before the passes was the owner's
// own words or nothing (cleanup in progress).
func TestExplainFamilyScenarios(t *testing.T) {
	operator := `{apiVersion: apps/v1, kind: Deployment, metadata: {name: operator, namespace: operators, labels: {app: operator}},
  spec: {replicas: 1, selector: {matchLabels: {app: operator}}, template: {metadata: {labels: {app: operator}}, spec: {serviceAccountName: operator, containers: [{name: operator, image: example.io/operator:v1, command: [/operator]}]}}},
  status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`
	for name, tc := range familyScenarios() {
		t.Run(name, func(t *testing.T) {
			s := familySubject(t, tc.target, tc.resource)
			u := s.Obj.(*unstructured.Unstructured)
			fin := u.GetFinalizers()[0]
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: u.GetAPIVersion(), FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{".":{},"v:\"` + fin + `\"":{}}}}`)}})
			target, err := yaml.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			e := familyExplainer(t, append(tc.cluster, string(target), operator)...)
			rep, err := e.ExplainObject(context.Background(), Target{GVR: s.GVR, GVK: s.GVK, Namespaced: u.GetNamespace() != "", Namespace: u.GetNamespace(), Name: u.GetName()}, u)
			if err != nil {
				t.Fatal(err)
			}
			root := ""
			if len(rep.RootBlockers) > 0 {
				root = rep.RootBlockers[0].Cause
			}
			t.Logf("%s: first root blocker %q (before the passes: %q)", tc.thread, root, tc.rootBefore)
			if root != tc.root {
				t.Errorf("%s: first root blocker %q, want %q", tc.thread, root, tc.root)
			}
			if tc.also != "" {
				found := false
				WalkFindings(rep.Findings, func(f *Finding) { found = found || f.Cause == tc.also })
				if !found {
					t.Errorf("%s: no %s in the tree", tc.thread, tc.also)
				}
			}
			verdict := tc.verdict
			if verdict == "" {
				verdict = VerdictBlocked
			}
			if rep.Verdict != verdict {
				t.Errorf("%s: verdict %q (evidence %q, checked %q), want %q", tc.thread, rep.Verdict, rep.ProgressEvidence, rep.Checked, verdict)
			}
			// Blocked or not, it says what it checked of the finalizer.
			if !strings.Contains(strings.Join(rep.Checked, "\n"), fin+": ") {
				t.Errorf("%s: checked %q, want %s's finding", tc.thread, rep.Checked, fin)
			}
		})
	}
}

// TestOwnerFoundByWhatRuns: family 4 for the owner's liveness. A Crossplane
// provider runs as a Deployment named after its package revision, the
// binary that wrote the finalizer in its args: it is the owner, alive, not
// "missing" (crossplane-contrib/provider-helm#102).
func TestOwnerFoundByWhatRuns(t *testing.T) {
	target := `{apiVersion: helm.crossplane.io/v1beta1, kind: ProviderConfigUsage, metadata: {name: release-1, namespace: apps, uid: pcu-1, deletionTimestamp: "2026-11-28T11:00:00Z", finalizers: [in-use.crossplane.io],
  managedFields: [{manager: crossplane-helm-provider, operation: Update, apiVersion: helm.crossplane.io/v1beta1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {".": {}, "v:\"in-use.crossplane.io\"": {}}}}}]}}`
	provider := `{apiVersion: apps/v1, kind: Deployment, metadata: {name: crossplane-contrib-provider-helm-1a2b3c, namespace: upbound-system},
  spec: {replicas: 1, selector: {matchLabels: {app: p}}, template: {metadata: {labels: {app: p}}, spec: {serviceAccountName: crossplane-contrib-provider-helm-1a2b3c, containers: [{name: package-runtime, image: xpkg.upbound.io/crossplane-contrib/provider-helm:v0.9.0, args: [crossplane-helm-provider, --debug]}]}}},
  status: {replicas: 1, readyReplicas: 1, availableReplicas: 1}}`
	for name, tc := range map[string]struct {
		cluster []string
		state   string
	}{
		"the provider runs: alive":            {cluster: []string{provider}, state: OwnerAlive},
		"nothing runs it: missing, as before": {state: OwnerMissing},
	} {
		t.Run(name, func(t *testing.T) {
			e := familyExplainer(t, append(tc.cluster, target)...)
			s := familySubject(t, target, "providerconfigusages")
			rep, err := e.ExplainObject(context.Background(), Target{GVR: s.GVR, GVK: s.GVK, Namespaced: true, Namespace: "apps", Name: "release-1"}, s.Obj)
			if err != nil {
				t.Fatal(err)
			}
			var f *Finding
			WalkFindings(rep.Findings, func(x *Finding) {
				if f == nil && x.Finalizer == "in-use.crossplane.io" && x.Owner != nil {
					f = x
				}
			})
			if f == nil || f.Owner.State != tc.state {
				t.Fatalf("owner %+v, want %s", f, tc.state)
			}
		})
	}
}

// TestHelperReviewNotInBulk: status (a Bulk run) asks no SubjectAccessReview
// per object for a helper's Forbidden; explain does.
func TestHelperReviewNotInBulk(t *testing.T) {
	tc := familyScenarios()["family 5: a provisioner's helper pod forbidden, confirmed by a SubjectAccessReview"]
	for _, bulk := range []bool{false, true} {
		objs := make([]runtime.Object, 0, len(tc.cluster))
		for _, d := range tc.cluster {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, u)
		}
		c, f := kubefake.New(t, objs...)
		reviews := 0
		f.Kube.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
			reviews++
			return true, &authorizationv1.SubjectAccessReview{}, nil
		})
		if bulk {
			c.Bulk()
		}
		e := NewExplainer(c, familyNow)
		s := familySubject(t, tc.target, tc.resource)
		ref := refOf(s.GVR, s.GVK, s.Obj)
		fd := &Finding{Cause: tc.cause, Severity: SeverityBlocker, Object: &ref, Finalizer: s.Obj.GetFinalizers()[0], Message: tc.message,
			Owner: &Owner{Component: "its operator", State: OwnerAlive, Source: SourceManager}}
		found := e.familyWaits(context.Background(), fd, s)
		if len(found) != 1 || found[0].Cause != CauseHelperFailed || (reviews == 0) != bulk {
			t.Errorf("bulk %v: %d SubjectAccessReview(s), findings %+v", bulk, reviews, found)
		}
	}
}
