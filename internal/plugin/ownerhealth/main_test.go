/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ownerhealth

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var record = flag.Bool("record", false, "write the text output of explain to ../testdata/docs, for docs/cli.md")

var (
	kubeconfig string
	restConfig *rest.Config
	cs         kubernetes.Interface
	dyn        dynamic.Interface
)

// TestMain starts a control plane whose kube-controller-manager runs the
// deployment, replicaset and disruption controllers too: a Deployment's
// pods are created and stay Pending (no scheduler, no kubelet), so its
// ready count is a real 0, and a PodDisruptionBudget's status is computed
// from the pods' Ready conditions.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("TEARDOWN_PLUGIN_UNIT_ONLY") != "" {
		os.Exit(m.Run())
	}
	testenv.Main(m, testenv.Options{
		CRDDirectoryPaths: []string{"testdata/crds"},
		Controllers:       []string{"garbagecollector", "namespace", "deployment", "replicaset", "disruption"},
	}, func(e *testenv.Env) {
		kubeconfig, restConfig = e.Kubeconfig, e.Config
		cs = kubernetes.NewForConfigOrDie(e.Config)
		dyn = dynamic.NewForConfigOrDie(e.Config)
	})
}

func needCluster(t *testing.T) {
	t.Helper()
	if cs == nil {
		t.Skip("no control plane (TEARDOWN_PLUGIN_UNIT_ONLY)")
	}
}

type result struct {
	out, err string
	code     int
}

// run runs kubectl-teardown against this control plane.
func run(args ...string) result { return runAs(kubeconfig, args...) }

// runAs runs kubectl-teardown with the credentials of a kubeconfig file.
func runAs(kc string, args ...string) result {
	var out, errOut bytes.Buffer
	code := plugin.Execute(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, append([]string{"--kubeconfig", kc}, args...))
	return result{out.String(), errOut.String(), code}
}

// readOnlyKubeconfig is a kubeconfig of a ServiceAccount that may get,
// list and watch everything, and nothing else.
func readOnlyKubeconfig(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	name := "ownerhealth-readonly"
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
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: restConfig.CAData}
	kc.AuthInfos["ro"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["ro"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "ro"}
	kc.CurrentContext = "ro"
	path := filepath.Join(t.TempDir(), "readonly.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the authorizer caches RBAC briefly
	return path
}

// explain runs explain -o json and decodes the report; it also runs the
// text output and fails the test if it reassures.
func explain(t *testing.T, args ...string) *diagnose.Report {
	t.Helper()
	r := run(append([]string{"explain", "-o", "json"}, args...)...)
	if r.code != plugin.ExitOK && r.code != plugin.ExitBlocked {
		t.Fatalf("explain %v: exit %d: %s", args, r.code, r.err)
	}
	rep := &diagnose.Report{}
	if err := json.Unmarshal([]byte(r.out), rep); err != nil {
		t.Fatalf("decoding explain's JSON: %v\n%s", err, r.out)
	}
	return rep
}

// blocked asserts that explain names a root blocker and never says
// nothing blocks.
func blocked(t *testing.T, rep *diagnose.Report, args ...string) {
	t.Helper()
	text := run(append([]string{"explain"}, args...)...)
	if !rep.Blocked || len(rep.RootBlockers) == 0 || strings.Contains(text.out, "nothing is blocked") || text.code != plugin.ExitBlocked {
		data, _ := json.MarshalIndent(rep, "", "  ")
		t.Fatalf("explain %v does not report a blocker (exit %d):\n%s\n%s", args, text.code, text.out, data)
	}
}

// find returns the first finding with cause about an object named name
// ("" for any).
func find(rep *diagnose.Report, cause, name string) *diagnose.Finding {
	var got *diagnose.Finding
	diagnose.WalkFindings(rep.Findings, func(f *diagnose.Finding) {
		if got == nil && f.Cause == cause && (name == "" || (f.Object != nil && f.Object.Name == name)) {
			c := *f
			got = &c
		}
	})
	return got
}

// root returns the root blocker with cause about name.
func root(t *testing.T, rep *diagnose.Report, cause, name string) *diagnose.Finding {
	t.Helper()
	for i := range rep.RootBlockers {
		r := &rep.RootBlockers[i]
		if r.Cause == cause && (name == "" || (r.Object != nil && r.Object.Name == name)) {
			return r
		}
	}
	data, _ := json.MarshalIndent(rep, "", "  ")
	t.Fatalf("no root blocker %s on %q:\n%s", cause, name, data)
	return nil
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s = %q, want it to contain %q", what, s, sub)
		}
	}
}

var nsCounter atomic.Int64

// newNamespace creates a namespace named after the test.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, nsCounter.Add(1))
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return name
}

// recordText writes explain's text output for docs/cli.md under -record.
func recordText(t *testing.T, file string, args ...string) {
	t.Helper()
	if !*record {
		return
	}
	r := run(args...)
	var b bytes.Buffer
	b.WriteString("$ kubectl teardown " + strings.Join(args, " ") + "\n")
	b.WriteString(r.out)
	b.WriteString(r.err)
	if r.code != 0 {
		fmt.Fprintf(&b, "(exit code %d)\n", r.code)
	}
	if err := os.WriteFile(filepath.Join("..", "testdata", "docs", file), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every 500ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	testenv.Eventually(t, timeout, what, cond)
}

// grant lets a ServiceAccount get, patch and update resources of group
// everywhere, as an operator's packaged RBAC does.
func grant(t *testing.T, ns, sa, group string, resources ...string) {
	t.Helper()
	name := ns + "-" + sa + "-" + resources[0]
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch", "patch", "update"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}
