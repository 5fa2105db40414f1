/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	admin    client.Client
	adminCfg *rest.Config
	// controllerCfg authenticates as a user bound to exactly the RBAC that
	// config/ ships, plus the sample grant for Services and ConfigMaps.
	controllerCfg *rest.Config
	root          string
)

func TestMain(m *testing.M) {
	var err error
	if root, err = testenv.ModuleRoot(); err != nil {
		panic(err)
	}
	opts := testenv.Options{
		// Aggregated ClusterRoles are filled by kube-controller-manager's
		// clusterrole-aggregation, one of testenv.DefaultControllers.
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
	}
	testenv.Main(m, opts, func(e *testenv.Env) {
		adminCfg = e.Config
		scheme, err := controller.NewScheme()
		if err != nil {
			panic(err)
		}
		if admin, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
		if controllerCfg, err = e.AddShippedController(context.Background(), admin, root, "teardown-controller"); err != nil {
			panic(err)
		}
	})
}

// TestShippedRBACIsEnough runs the controller with exactly the shipped RBAC:
// a policy on a kind it was granted works end to end, and one on a kind it
// was not granted says so in its Ready condition instead of failing quietly.
func TestShippedRBACIsEnough(t *testing.T) {
	testenv.SkipShort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := controller.ManagerOptions{Controller: controller.DefaultOptions()}
	opts.Controller.StatusInterval = time.Second
	mgr, err := controller.NewManager(controllerCfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	}()

	ns := testenv.NewNamespace(t, admin)
	granted := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "configmaps", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}},
	}
	denied := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "secrets", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Secret",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}},
	}
	for _, p := range []client.Object{granted, denied} {
		if err := admin.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	readyOf := func(p *teardownv1alpha1.TeardownPolicy) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return false, err
			}
			return meta.FindStatusCondition(p.Status.Conditions, teardownv1alpha1.ReadyCondition) != nil, nil
		}
	}
	// The aggregation controller may need a moment to fill the grant.
	testenv.Eventually(t, 30*time.Second, "the granted policy to be Ready", func(ctx context.Context) (bool, error) {
		if ok, err := readyOf(granted)(ctx); !ok || err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(granted.Status.Conditions, teardownv1alpha1.ReadyCondition), nil
	})
	testenv.Eventually(t, 30*time.Second, "the denied policy's condition", readyOf(denied))
	c := meta.FindStatusCondition(denied.Status.Conditions, teardownv1alpha1.ReadyCondition)
	if c.Status != metav1.ConditionFalse || c.Reason != teardownv1alpha1.ForbiddenReason || !strings.Contains(c.Message, "spec.targets[0]: the controller may not list secrets cluster-wide") {
		t.Errorf("denied policy Ready = %s %s %q, want False Forbidden: may not list secrets", c.Status, c.Reason, c.Message)
	}
	// A step that needs what its ServiceAccount was not granted is caught
	// up front too, not at the first deletion.
	if err := admin.Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps-only", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "patch"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "configmaps-only", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps-only"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "configmaps-only", Namespace: ns}}}); err != nil {
		t.Fatal(err)
	}
	stepDenied := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "wait-on-secrets", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			ServiceAccountName: "configmaps-only",
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "y"}}}},
			Steps: []teardownv1alpha1.Step{{Name: "secrets-gone", Wait: &teardownv1alpha1.WaitAction{
				Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret",
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "y"}}}},
				Condition: "size(objects) == 0",
			}}},
		},
	}
	if err := admin.Create(t.Context(), stepDenied); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the step-denied policy's condition", readyOf(stepDenied))
	c = meta.FindStatusCondition(stepDenied.Status.Conditions, teardownv1alpha1.ReadyCondition)
	if c.Status != metav1.ConditionFalse || c.Reason != teardownv1alpha1.ForbiddenReason ||
		!strings.Contains(c.Message, "spec.steps[0] (secrets-gone): ServiceAccount "+ns+"/configmaps-only may not list secrets in namespace "+ns) {
		t.Errorf("step-denied policy Ready = %s %s %q, want False Forbidden naming the step", c.Status, c.Reason, c.Message)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns, Labels: map[string]string{"app": "x"}}}
	if err := admin.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	key := ns + ".teardown.dev/configmaps"
	testenv.Eventually(t, 20*time.Second, "the finalizer", func(ctx context.Context) (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(cm), cm)
		return err == nil && slices.Contains(cm.Finalizers, key), err
	})
	if err := admin.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the ConfigMap to go", testenv.Gone(admin, cm))

	// A ClusterTeardownPolicy's job step needs the Job rights the install
	// does not grant cluster-wide: not Ready, naming the ClusterRole to bind,
	// until it is bound in the Job's namespace.
	withJob := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-job"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "job"}}}},
			Steps: []teardownv1alpha1.Step{{Name: "drain", Job: &teardownv1alpha1.JobAction{Namespace: ns, Template: teardownv1alpha1.JobTemplate{
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "drain", Image: "busybox", Command: []string{"true"}}}}}}}}}},
		},
	}
	if err := admin.Create(t.Context(), withJob); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), withJob) })
	clusterReady := func(want metav1.ConditionStatus) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(withJob), withJob); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(withJob.Status.Conditions, teardownv1alpha1.ReadyCondition)
			return c != nil && c.ObservedGeneration == withJob.Generation && c.Status == want, nil
		}
	}
	testenv.Eventually(t, 30*time.Second, "the job policy to be refused", clusterReady(metav1.ConditionFalse))
	c = meta.FindStatusCondition(withJob.Status.Conditions, teardownv1alpha1.ReadyCondition)
	if c.Reason != teardownv1alpha1.ForbiddenReason || !strings.Contains(c.Message, "bind the ClusterRole teardown-controller-jobs to it with a RoleBinding in namespace "+ns) {
		t.Errorf("job policy Ready = %s %q, want Forbidden naming teardown-controller-jobs", c.Reason, c.Message)
	}
	if err := admin.Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "teardown-controller-jobs", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "teardown-controller-jobs"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "teardown-controller"}}}); err != nil {
		t.Fatal(err)
	}
	// A failed check is asked again soon, with no edit of the policy: RBAC
	// applied after the policy (a GitOps sync's order) serves it.
	testenv.Eventually(t, 30*time.Second, "the job policy to be Ready once bound", clusterReady(metav1.ConditionTrue))

	// Deleting a policy releases with the same rights.
	if err := admin.Delete(t.Context(), granted); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the policy to go", testenv.Gone(admin, granted))
}
