/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/teardown-dev/teardown/internal/testenv"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

var gvrClusterPolicy = schema.GroupVersionResource{Group: "teardown.dev", Version: "v1alpha1", Resource: "clusterteardownpolicies"}

// plan shows, for a ServiceAccount an unused step holds, the pods that would
// hold it now, in the controller's words; a ServiceAccount that only a
// finished pod ran as shows none; a Role a TeardownPolicy holds shows the
// pods of its namespace its RoleBinding names.
func TestPlanUnusedHolders(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ns := newNamespace(t)
	const fin = "unused.teardown.test/pods-gone"
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "teardown.dev/v1alpha1", "kind": "ClusterTeardownPolicy",
		"metadata": map[string]any{"name": "plan-unused"},
		"spec": map[string]any{
			"finalizer": fin,
			"targets": []any{
				map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "selector": map[string]any{}},
				map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "selector": map[string]any{}},
			},
			"steps": []any{map[string]any{"name": "pods-gone", "unused": map[string]any{}}},
		},
	}}
	dyn := dynamic.NewForConfigOrDie(cfg)
	if _, err := dyn.Resource(gvrClusterPolicy).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(gvrClusterPolicy).Delete(context.Background(), "plan-unused", metav1.DeleteOptions{})
	})

	// The ServiceAccounts carry the policy's finalizer, as the controller
	// would have added it.
	for _, sa := range []string{"web", "builder"} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Finalizers: []string{fin}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cs.CoreV1().ServiceAccounts(ns).Patch(context.Background(), sa, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
	}
	// Two pods of a StatefulSet run as web, one of them terminating (a
	// finalizer keeps it); no StatefulSet controller runs here, so the
	// pods are made by hand with its controller reference.
	sts, err := cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/web"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mkPod := func(name, sa string, mutate func(*corev1.Pod)) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{ServiceAccountName: sa, AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
		if mutate != nil {
			mutate(p)
		}
		got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cs.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
		return got
	}
	ownedBySTS := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: sts.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	}
	mkPod("web-0", "web", ownedBySTS)
	mkPod("web-1", "web", func(p *corev1.Pod) { ownedBySTS(p); p.Finalizers = []string{"unused.teardown.test/keep"} })
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A finished pod that ran as builder holds nothing.
	done := mkPod("build-1", "builder", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever })
	done.Status.Phase = corev1.PodSucceeded
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A TeardownPolicy of the namespace holds a Role while the pods its
	// RoleBinding names run: found through the bindings plan lists, among
	// the pods of the policy's namespace only.
	const roleFin = "unused.teardown.test/role-users"
	nsPolicy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "teardown.dev/v1alpha1", "kind": "TeardownPolicy",
		"metadata": map[string]any{"name": "role-users", "namespace": ns},
		"spec": map[string]any{
			"finalizer": roleFin,
			"targets":   []any{map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "selector": map[string]any{}}},
			"steps":     []any{map[string]any{"name": "users-gone", "unused": map[string]any{}}},
		},
	}}
	if _, err := dyn.Resource(gvrPolicy).Namespace(ns).Create(ctx, nsPolicy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "web-reader", Finalizers: []string{roleFin}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.RbacV1().Roles(ns).Patch(context.Background(), "web-reader", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "web-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "web-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "web"}, {Kind: "ServiceAccount", Namespace: "elsewhere", Name: "web"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := cli(t, "", nil, "plan", "namespace/"+ns, "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("plan: exit %d: %s", r.code, r.err)
	}
	rep := &PlanReport{}
	if err := json.Unmarshal([]byte(r.out), rep); err != nil {
		t.Fatal(err)
	}
	got := map[string][]PlanUnused{}
	for _, n := range rep.Root.Children {
		if n.Object.Kind == "ServiceAccount" || n.Object.Kind == "Role" {
			got[n.Object.Kind+" "+n.Object.Name] = n.Unused
		}
	}
	webPods := []PlanPod{
		{Namespace: ns, Name: "web-0", Owner: "StatefulSet web"},
		{Namespace: ns, Name: "web-1", Owner: "StatefulSet web", Terminating: true},
	}
	want := map[string][]PlanUnused{
		"ServiceAccount web": {{Finalizer: fin, Step: "pods-gone", Pods: webPods,
			Message: "2 pods of StatefulSet " + ns + "/web still run as this ServiceAccount (1 terminating)"}},
		"ServiceAccount builder": {{Finalizer: fin, Step: "pods-gone"}},
		"Role web-reader": {{Finalizer: roleFin, Step: "users-gone", Scope: ns, Pods: webPods, Through: []string{"RoleBinding " + ns + "/web-reader"},
			Message: "2 pods of StatefulSet " + ns + "/web still run with this Role's rights (through RoleBinding " + ns + "/web-reader) (1 terminating)"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan's unused holders (-want +got):\n%s", diff)
	}

	// The tree says the same, on the object's own plan too.
	r = cli(t, "", nil, "plan", "serviceaccount/web", "-n", ns)
	line := "unused step pods-gone: held while a pod uses it; now 2 pods of StatefulSet " + ns + "/web still run as this ServiceAccount (1 terminating)"
	if r.code != ExitOK || !strings.Contains(r.out, line) {
		t.Errorf("plan serviceaccount/web: exit %d, want the line %q in:\n%s%s", r.code, line, r.out, r.err)
	}
	r = cli(t, "", nil, "plan", "serviceaccount/builder", "-n", ns)
	if line := "unused step pods-gone: held while a pod uses it; none does now"; r.code != ExitOK || !strings.Contains(r.out, line) {
		t.Errorf("plan serviceaccount/builder: exit %d, want the line %q in:\n%s%s", r.code, line, r.out, r.err)
	}

	// A ClusterRole bound to web: plan lists the bindings, then the pods of
	// only the namespace their subjects name, not of the whole cluster.
	crName := ns + "-web"
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: crName, Finalizers: []string{fin}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.RbacV1().ClusterRoles().Patch(context.Background(), crName, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), crName, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crName, metav1.DeleteOptions{})
	})
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: crName},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "web"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	log := &requestLog{}
	r = cli(t, "", log, "plan", "clusterrole/"+crName, "-o", "json")
	rep = &PlanReport{}
	if err := json.Unmarshal([]byte(r.out), rep); r.code != ExitOK || err != nil {
		t.Fatalf("plan clusterrole: exit %d, %v: %s%s", r.code, err, r.out, r.err)
	}
	wantCR := []PlanUnused{{Finalizer: fin, Step: "pods-gone", Pods: webPods, Through: []string{"ClusterRoleBinding " + crName},
		Message: "2 pods of StatefulSet " + ns + "/web still run with this ClusterRole's rights (through ClusterRoleBinding " + crName + ") (1 terminating)"}}
	if diff := cmp.Diff(wantCR, rep.Root.Unused); diff != "" {
		t.Errorf("plan clusterrole's unused holders (-want +got):\n%s", diff)
	}
	var podLists []string
	for _, req := range log.reqs {
		if path, _, _ := strings.Cut(req, "?"); strings.HasSuffix(path, "/pods") {
			podLists = append(podLists, path)
		}
	}
	// The cluster-wide list is plan's metadata-only listing of every kind
	// (a ClusterRole's scope is the cluster); the holders' list is the
	// namespaced one.
	slices.Sort(podLists)
	if diff := cmp.Diff([]string{"GET /api/v1/namespaces/" + ns + "/pods", "GET /api/v1/pods"}, podLists); diff != "" {
		t.Errorf("pod lists of plan clusterrole (-want +got):\n%s", diff)
	}

	// Someone who may not list pods is told so, not that none uses it.
	noPods := kubeconfigWithRules(t, "plan-no-pods", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts", "namespaces"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"teardown.dev"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
	})
	r = cli(t, noPods, nil, "plan", "serviceaccount/web", "-n", ns, "-o", "json")
	rep = &PlanReport{}
	if err := json.Unmarshal([]byte(r.out), rep); r.code != ExitOK || err != nil {
		t.Fatalf("plan without the right to list pods: exit %d, %v: %s%s", r.code, err, r.out, r.err)
	}
	if u := rep.Root.Unused; len(u) != 1 || len(u[0].Pods) != 0 || u[0].Message != "" ||
		!strings.HasPrefix(u[0].Error, "cannot tell which pods use it: listing pods in namespace "+ns+": ") || !strings.Contains(u[0].Error, "forbidden") {
		t.Errorf("plan without the right to list pods: unused = %+v; want the forbidden list as the error", u)
	}

	if *docs {
		// docs/cli.md shows this output, with the namespace renamed.
		r = cli(t, "", nil, "plan", "namespace/"+ns)
		out := "$ kubectl teardown plan namespace/agents\n" + strings.ReplaceAll(r.out, ns, "agents")
		if err := os.WriteFile(filepath.Join("testdata", "docs", "plan-unused.txt"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kubeconfigWithRules writes a kubeconfig for a new ServiceAccount of
// namespace default that may do only what rules grant, cluster-wide.
func kubeconfigWithRules(t *testing.T, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = cs.CoreV1().ServiceAccounts("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "c", AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitAllowed(ctx, cs, testenv.Access(rbacv1.ServiceAccountKind, "default", name, authorizationv1.ResourceAttributes{
		Group: rules[0].APIGroups[0], Resource: rules[0].Resources[0], Verb: rules[0].Verbs[0]})); err != nil {
		t.Fatal(err)
	}
	return path
}
