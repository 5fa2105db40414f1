/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
)

// readOnlyKubeconfig writes a kubeconfig for a ServiceAccount that may only
// get, list and watch.
func readOnlyKubeconfig(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	name := "teardown-readonly"
	_, _ = cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	_, _ = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{})
	_, _ = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}}}, metav1.CreateOptions{})
	tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["ro"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["ro"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "ro"}
	kc.CurrentContext = "ro"
	path := filepath.Join(t.TempDir(), "readonly.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	// RBAC is cached by the authorizer briefly.
	time.Sleep(time.Second)
	return path
}

// explain, status and plan never write to the cluster: with an admin they
// send only GETs and server-side dry-runs, and a user who may only read gets
// the same diagnosis.
func TestReadOnlyCommandsNeverWrite(t *testing.T) {
	needCluster(t)
	ns := newNamespace(t)
	root := configMap(t, ns, "root", "kubectl-create", nil)
	configMap(t, ns, "child", "kubectl-create", []string{"nobody.teardown.invalid/hold"}, func(cm *corev1.ConfigMap) {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "root", UID: root.UID, BlockOwnerDeletion: ptr.To(true)}}
	})
	configMap(t, ns, "stuck", "kubectl-edit", []string{"nobody.teardown.invalid/stale"})
	deleteConfigMap(t, ns, "stuck", "")
	gone := newNamespace(t)
	configMap(t, gone, "held", "kubectl-edit", []string{"nobody.teardown.invalid/stale"})
	deleteNamespace(t, gone)

	commands := [][]string{
		{"explain", "configmap/stuck", "-n", ns},
		{"explain", "configmap/root", "-n", ns},
		{"explain", "namespace/" + gone},
		{"explain", "namespace/" + gone, "-o", "yaml"},
		{"status"},
		{"status", "-A"},
		{"status", "-n", ns, "-o", "json"},
		{"plan", "configmap/root", "-n", ns, "--cascade", "foreground"},
		{"plan", "namespace/" + ns, "-o", "json"},
	}
	ro := readOnlyKubeconfig(t)
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			log := &requestLog{}
			admin := cli(t, "", log, args...)
			if admin.code != ExitOK && admin.code != ExitBlocked {
				t.Fatalf("admin: exit %d: %s", admin.code, admin.err)
			}
			onlyReads(t, log)
			reader := cli(t, ro, nil, args...)
			if reader.code != admin.code {
				t.Errorf("read-only user: exit %d, admin %d: %s", reader.code, admin.code, reader.err)
			}
		})
	}
	// The read-only user gets the same causes from explain (only the
	// dry-run checks, which need patch rights, are missing).
	admin := cli(t, "", nil, "explain", "namespace/"+gone, "-o", "json")
	reader := cli(t, ro, nil, "explain", "namespace/"+gone, "-o", "json")
	if causes(t, admin.out) != causes(t, reader.out) {
		t.Errorf("causes differ:\nadmin:  %s\nreader: %s", causes(t, admin.out), causes(t, reader.out))
	}
}

func causes(t *testing.T, out string) string {
	t.Helper()
	rep := &diagnose.Report{}
	if err := json.Unmarshal([]byte(out), rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var cs []string
	diagnose.WalkFindings(rep.Findings, func(f *diagnose.Finding) { cs = append(cs, f.Cause) })
	return strings.Join(cs, ",")
}
