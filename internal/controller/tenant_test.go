/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// tenantSetup is a tenant namespace whose author may only write
// TeardownPolicies and ConfigMaps there, a ServiceAccount "cleaner" there
// that may only manage ConfigMaps there, and a victim namespace with
// things the author may not touch.
type tenantSetup struct {
	tenant, victim string
	author         client.Client
	precious       *corev1.ConfigMap
	secret         *corev1.Secret
	clusterRole    *rbacv1.ClusterRole
}

var tenantUsers int

func newTenant(t *testing.T) tenantSetup {
	t.Helper()
	ts := tenantSetup{tenant: testenv.NewNamespace(t, k8s), victim: testenv.NewNamespace(t, k8s)}
	ts.precious = labelled(ts.victim, "precious", "doomed", "yes")
	create(t, ts.precious)
	ts.secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: ts.tenant, Labels: map[string]string{"doomed": "yes"}},
		StringData: map[string]string{"token": "s3cr3t-value"}}
	create(t, ts.secret)
	ts.clusterRole = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ts.tenant + "-victim", Labels: map[string]string{"doomed": "yes"}}}
	create(t, ts.clusterRole)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ts.clusterRole) })

	// The ServiceAccount the author's policies act as: ConfigMaps of the
	// tenant namespace, nothing else.
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cleaner", Namespace: ts.tenant}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
	}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cleaner", Namespace: ts.tenant},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cleaner"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "cleaner", Namespace: ts.tenant}}})

	// The author: TeardownPolicies and ConfigMaps of the tenant namespace.
	tenantUsers++
	user := fmt.Sprintf("tenant-author-%d", tenantUsers)
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "author", Namespace: ts.tenant}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{teardownv1alpha1.GroupVersion.Group}, Resources: []string{"teardownpolicies"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{"cleaner"}, Verbs: []string{"impersonate"}},
	}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "author", Namespace: ts.tenant},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "author"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})
	authorCfg, err := env.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	if ts.author, err = client.New(authorCfg, client.Options{Scheme: k8s.Scheme()}); err != nil {
		t.Fatal(err)
	}
	return ts
}

// policy is a TeardownPolicy of the tenant acting as "cleaner", guarding
// ConfigMaps labelled app=<name>.
func (ts tenantSetup) policy(name string, steps ...teardownv1alpha1.Step) *teardownv1alpha1.TeardownPolicy {
	return &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ts.tenant},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			ServiceAccountName: "cleaner",
			Targets:            []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", name)}},
			Steps:              steps,
		},
	}
}

// untouched fails unless everything outside the tenant's reach is as it was.
func (ts tenantSetup) untouched(t *testing.T) {
	t.Helper()
	for _, obj := range []client.Object{ts.precious, ts.secret, ts.clusterRole, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ts.victim}}} {
		got := obj.DeepCopyObject().(client.Object)
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
			t.Errorf("%T %s: %v", obj, obj.GetName(), err)
		} else if got.GetDeletionTimestamp() != nil {
			t.Errorf("%T %s is being deleted", obj, obj.GetName())
		}
	}
}

// admissionRefuses marks a case the API server refuses outright.
const admissionRefuses = "refused at admission"

// TestTenantCannotReachBeyondTheirRights: a user who may only write
// TeardownPolicies and ConfigMaps in their namespace, and act as a
// ServiceAccount that may only manage ConfigMaps there, cannot make
// Teardown delete, read or change anything else: cluster-scoped kinds,
// other namespaces, Secrets (through a wait condition or a target), other
// ServiceAccounts (through a Job). Each attempt is reported not Ready
// before anything is guarded, and nothing outside is touched even when the
// author deletes their own objects.
func TestTenantCannotReachBeyondTheirRights(t *testing.T) {
	testenv.SkipShort(t)
	ts := newTenant(t)
	deleteStep := func(apiVersion, kind string) teardownv1alpha1.Step {
		return teardownv1alpha1.Step{Name: "delete-" + strings.ToLower(kind), Delete: &teardownv1alpha1.DeleteAction{
			Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: apiVersion, Kind: kind, Selector: selector("doomed", "yes")}}}}
	}
	jobStep := func(ns, sa string) teardownv1alpha1.Step {
		return teardownv1alpha1.Step{Name: "job", Job: &teardownv1alpha1.JobAction{Namespace: ns, Template: teardownv1alpha1.JobTemplate{
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: sa,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"true"}}}}}},
		}}}
	}
	cases := map[string]struct {
		pol        *teardownv1alpha1.TeardownPolicy
		wantReason string
		wantText   string
	}{
		"delete a Namespace": {ts.policy("ns", deleteStep("v1", "Namespace")), teardownv1alpha1.ClusterScopedKindReason, "Namespace is cluster-scoped"},
		"delete a ClusterRole": {ts.policy("cr", deleteStep("rbac.authorization.k8s.io/v1", "ClusterRole")),
			teardownv1alpha1.ClusterScopedKindReason, "ClusterRole is cluster-scoped"},
		"delete Secrets": {ts.policy("secrets", deleteStep("v1", "Secret")), teardownv1alpha1.ForbiddenReason,
			"ServiceAccount " + ts.tenant + "/cleaner may not list secrets"},
		"read Secrets through a condition": {ts.policy("cel", teardownv1alpha1.Step{Name: "peek", Wait: &teardownv1alpha1.WaitAction{
			Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret", Selector: selector()}},
			Condition: `{"x": true}[string(objects[0].data.token)]`}}), teardownv1alpha1.ForbiddenReason, "may not list secrets"},
		"a Job as another ServiceAccount": {ts.policy("other-sa", jobStep("", "admin")), teardownv1alpha1.InvalidJobTemplateReason,
			"would run as ServiceAccount admin"},
		"a Job in another namespace": {ts.policy("other-ns", jobStep(ts.victim, "")), admissionRefuses, "runs its Jobs in its own namespace"},
		"a Job at all":               {ts.policy("job", jobStep("", "")), teardownv1alpha1.ForbiddenReason, "may not get jobs.batch"},
		"guard Secrets": {func() *teardownv1alpha1.TeardownPolicy {
			p := ts.policy("guard-secrets")
			p.Spec.Targets[0].Kind = "Secret"
			return p
		}(), teardownv1alpha1.ForbiddenReason, "may not patch secrets"},
		"a Service of another namespace by URL": {ts.policy("svc-url", teardownv1alpha1.Step{Name: "hook", Webhook: &teardownv1alpha1.WebhookAction{
			URL: ptr.To("https://internal." + ts.victim + ".svc.cluster.local/cleanup")}}), teardownv1alpha1.ClusterScopedKindReason,
			"webhook.url names a Service of namespace " + ts.victim},
		"a Service of another namespace": {ts.policy("svc", teardownv1alpha1.Step{Name: "hook", Webhook: &teardownv1alpha1.WebhookAction{
			Service: &teardownv1alpha1.ServiceReference{Namespace: ts.victim, Name: "internal"}}}), teardownv1alpha1.ClusterScopedKindReason,
			"Services of its own namespace"},
	}
	var guardedByRefused []*corev1.ConfigMap
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ts.author.Create(t.Context(), tc.pol)
			if tc.wantReason == admissionRefuses {
				if err == nil || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("creating the policy: %v, want it refused at admission mentioning %q", err, tc.wantText)
				}
				return
			}
			if err != nil {
				t.Fatalf("the author could not create the policy: %v", err)
			}
			c := ready(t, tc.pol)
			if c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantText) {
				t.Errorf("Ready = %s %s %q, want False %s mentioning %q", c.Status, c.Reason, c.Message, tc.wantReason, tc.wantText)
			}
			if strings.Contains(c.Message, "s3cr3t-value") {
				t.Errorf("the condition shows the Secret's value: %q", c.Message)
			}
			cm := labelled(ts.tenant, "target-"+tc.pol.Name, "app", tc.pol.Name)
			if err := ts.author.Create(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
			guardedByRefused = append(guardedByRefused, cm)
		})
	}
	// The author deletes what the refused policies would have guarded: no
	// finalizer was ever attached, nothing runs.
	for _, cm := range guardedByRefused {
		if ok, _ := hasFinalizer(cm, ts.tenant+".teardown.dev/"+cm.Labels["app"])(t.Context()); ok {
			t.Errorf("a policy that is not Ready guarded %s", cm.Name)
		}
		if err := ts.author.Delete(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	ts.untouched(t)
}

// TestTenantPolicyActsAsItsServiceAccount: a tenant's policy within its
// rights works end to end, and its steps act as its ServiceAccount: a
// delete step removes a ConfigMap of the tenant namespace; the same step
// aimed at Secrets, which the ServiceAccount may not delete, is refused by
// the API server for the ServiceAccount (not done with the controller's
// rights) once the ServiceAccount loses the right after the policy was
// served.
func TestTenantPolicyActsAsItsServiceAccount(t *testing.T) {
	testenv.SkipShort(t)
	ts := newTenant(t)
	leftover := labelled(ts.tenant, "leftover", "doomed", "yes")
	if err := ts.author.Create(t.Context(), leftover); err != nil {
		t.Fatal(err)
	}
	pol := ts.policy("works", teardownv1alpha1.Step{Name: "delete-leftovers", Delete: &teardownv1alpha1.DeleteAction{
		Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("doomed", "yes")}}}})
	if err := ts.author.Create(t.Context(), pol); err != nil {
		t.Fatal(err)
	}
	mustBeReady(t, pol)
	cm := labelled(ts.tenant, "guarded", "app", "works")
	if err := ts.author.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	key := ts.tenant + ".teardown.dev/works"
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(cm, key))

	// The ServiceAccount loses the right to delete: the step now fails
	// for it, and the object stays guarded (a Forbidden is not a failure
	// of the cleanup: it is retried, never a reason to release).
	role := &rbacv1.Role{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ts.tenant, Name: "cleaner"}, role); err != nil {
		t.Fatal(err)
	}
	role.Rules[0].Verbs = []string{"get", "list", "watch", "patch"}
	if err := k8s.Update(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	if err := ts.author.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	stillGuarded(t, cm, key, "when its ServiceAccount may not run its step")
	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(leftover), got); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("the delete step ran with more than its ServiceAccount's rights: leftover %v, deleting %v", err, got.DeletionTimestamp)
	}
	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	if err := k8s.Update(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 40*time.Second, "the leftover deleted by the step", testenv.Gone(k8s, leftover))
	testenv.Eventually(t, 40*time.Second, "the guarded object gone", testenv.Gone(k8s, cm))
	ts.untouched(t)
}
