/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

// shippedRBACController starts a teardown-controller process that acts as
// a ServiceAccount bound to the shipped ClusterRole (config/rbac/role.yaml)
// plus what an installer grants for ConfigMap targets, not as an
// administrator: what it may not list, it may not list here either.
func shippedRBACController(t *testing.T) *procctl.Controller {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t)
	suffix := strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "teardown-controller"}}
	create(t, sa)
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, shipped); err != nil {
		t.Fatal(err)
	}
	targets := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "update"}}}}
	for i, role := range []*rbacv1.ClusterRole{shipped, targets} {
		role.ObjectMeta = metav1.ObjectMeta{Name: suffix + "-" + string(rune('a'+i))}
		create(t, role)
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
		}
		create(t, binding)
		t.Cleanup(func() {
			_ = k8s.Delete(context.Background(), binding)
			_ = k8s.Delete(context.Background(), role)
		})
	}
	if err := testenv.WaitAllowed(ctx, cs, testenv.Access(rbacv1.ServiceAccountKind, ns, sa.Name,
		authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps"})); err != nil {
		t.Fatal(err)
	}
	token, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saCfg := &rest.Config{Host: env.Config.Host, BearerToken: token.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	if _, err := procctl.Build(filepath.Join(env.Dir, "bin")); err != nil {
		t.Fatal(err)
	}
	c, err := procctl.New(procctl.Options{Name: "shipped-rbac", Dir: logDir(t), Config: saCfg,
		IfSupported: []string{"--webhook-allowed-cidrs=127.0.0.0/8"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Kill()
		if t.Failed() {
			t.Log(c.LogTail(40))
		}
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

func ptrTo[T any](v T) *T { return &v }

// TestUnlistableKindStallsNoWorker (issue 16, family 3): the controller runs
// with the shipped RBAC, which does not let it list Secrets. A deleted
// TeardownPolicy, kept by a teardown in progress, is edited to guard
// Secrets too. Before, the edited spec was put in force unchecked and its
// cache read of Secrets never returned: the one worker every TeardownPolicy
// shares stalled, and no TeardownPolicy anywhere was served again. Now the
// edit is refused for that policy alone (Forbidden), and another
// namespace's new policy is served.
func TestUnlistableKindStallsNoWorker(t *testing.T) {
	testenv.SkipShort(t) // reads the suite's running manager
	shippedRBACController(t)
	ns, other := newNamespace(t), newNamespace(t)
	srv := newCleanupServer(t, func(webhookRequest) answer { return inProgress })
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edited"},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			Finalizer: "example.com/edited",
			Targets:   []teardownv1alpha1.Target{configMapTarget(labels("app", "guarded"))},
			Steps:     []teardownv1alpha1.Step{srv.step("cleanup")},
		},
	}
	create(t, pol)
	mustBeReady(t, pol)
	cm := guardedConfigMaps(t, ns, "example.com/edited", 1)[0]
	deleteNow(t, cm)
	testenv.Eventually(t, 30*time.Second, "the cleanup to start", func(context.Context) (bool, error) { return srv.callsFor(cm.UID) > 0, nil })
	deleteNow(t, pol)
	targets := append(pol.Spec.Targets, teardownv1alpha1.Target{APIVersion: "v1", Kind: "Secret", Selector: &metav1.LabelSelector{MatchLabels: labels("app", "guarded")}})
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"targets": targets}})
	if err := k8s.Patch(context.Background(), pol, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if cond := readyOf(t, pol, 30*time.Second); cond.Reason != teardownv1alpha1.ForbiddenReason || !strings.Contains(cond.Message, "secrets") {
		t.Errorf("the edited deleted policy: Ready=%s %s: %s; want Forbidden on secrets", cond.Status, cond.Reason, cond.Message)
	}
	fresh := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "fresh"},
		Spec:       teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", "guarded"))}},
	}
	create(t, fresh)
	if cond := readyOf(t, fresh, 30*time.Second); cond.Status != metav1.ConditionTrue {
		t.Errorf("another namespace's new policy: Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
	}
}
