/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package plugintest holds what the plugin's scenario suites share: starting
// their control plane, running kubectl-teardown against it, a read-only
// user's kubeconfig, reading explain's report and recording outputs for
// docs/cli.md. Only tests import it. It does not import package plugin,
// whose own tests use it too: a suite passes plugin.Execute (or its own
// command) in.
package plugintest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// UnitOnlyEnv, when set, runs a suite's tests without a control plane, as
// -short (the unit tier) does; the tests that need one skip.
const UnitOnlyEnv = "TEARDOWN_PLUGIN_UNIT_ONLY"

// Main is a suite's TestMain: it starts a control plane with opts and hands
// it to use, unless UnitOnlyEnv is set or the run is -short.
func Main(m *testing.M, opts testenv.Options, use func(*testenv.Env)) {
	flag.Parse()
	if os.Getenv(UnitOnlyEnv) != "" || testenv.Short() {
		os.Exit(m.Run())
	}
	testenv.Main(m, opts, use)
}

// NeedCluster skips a test that needs the control plane in unit-only runs
// (cs is nil then).
func NeedCluster(t testing.TB, cs kubernetes.Interface) {
	t.Helper()
	if cs == nil {
		t.Skip("no control plane (" + UnitOnlyEnv + ")")
	}
}

// Execute runs kubectl-teardown with args: plugin.Execute.
type Execute func(streams genericiooptions.IOStreams, args []string) int

// Result is what one run of kubectl-teardown wrote and its exit code.
type Result struct {
	Out, Err string
	Code     int
}

// Run runs execute with the credentials of kubeconfig and captures its
// output.
func Run(execute Execute, kubeconfig string, args ...string) Result {
	var out, errOut bytes.Buffer
	code := execute(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, append([]string{"--kubeconfig", kubeconfig}, args...))
	return Result{Out: out.String(), Err: errOut.String(), Code: code}
}

// ReadOnlyKubeconfig writes a kubeconfig for a ServiceAccount named name,
// in default, that may get, list and watch everything and nothing else.
func ReadOnlyKubeconfig(t testing.TB, cfg *rest.Config, cs kubernetes.Interface, name string) string {
	t.Helper()
	ctx := t.Context()
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
	if err := testenv.WaitAllowed(ctx, cs, testenv.Access(rbacv1.ServiceAccountKind, "default", name,
		authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"})); err != nil {
		t.Fatal(err)
	}
	return path
}
