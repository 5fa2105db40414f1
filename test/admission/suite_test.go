/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/teardown-dev/teardown/internal/testenv"
)

const (
	// controllerUser is the identity config/default exempts: the
	// teardown-controller's ServiceAccount.
	controllerUser = "system:serviceaccount:teardown-system:teardown-controller"
	// hint is what every refusal must tell the user to do instead.
	hint = "use kubectl teardown release"
)

var (
	env *testenv.Env
	// admin is the control plane's administrator (system:masters): the
	// policy applies to it as to anyone but the controller.
	admin kubernetes.Interface
	// installed are the policy objects from config/, as applied.
	installed []*unstructured.Unstructured
)

func TestMain(m *testing.M) {
	// The CRDs, for the manager TestMetricsNeedAuthorization starts.
	opts := testenv.Options{TeardownCRDs: true}
	testenv.Main(m, opts, func(e *testenv.Env) {
		env = e
		var err error
		if admin, err = kubernetes.NewForConfig(e.Config); err != nil {
			panic(err)
		}
		if installed, err = installPolicy(context.Background()); err != nil {
			panic(err)
		}
	})
}

// shippedPolicy returns the ValidatingAdmissionPolicy and its binding as the
// install builds them: `kubectl kustomize config/default`, so that the
// replacements there are tested too.
func shippedPolicy() ([]*unstructured.Unstructured, error) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return nil, err
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", "default"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize config/default: %w\n%s", err, stderr.String())
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding config/default: %w", err)
		}
		if obj.GetAPIVersion() == "admissionregistration.k8s.io/v1" &&
			(obj.GetKind() == "ValidatingAdmissionPolicy" || obj.GetKind() == "ValidatingAdmissionPolicyBinding") {
			out = append(out, obj)
		}
	}
	if len(out) != 8 {
		return nil, fmt.Errorf("config/default holds %d ValidatingAdmissionPolicy objects, want four policies and their bindings", len(out))
	}
	return out, nil
}

// installPolicy creates the shipped policy and binding, exactly as built
// (kustomize also writes a metadata.namespace into these cluster-scoped
// objects, which the API server drops), and waits until the API server
// enforces them.
func installPolicy(ctx context.Context) ([]*unstructured.Unstructured, error) {
	objs, err := shippedPolicy()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		res := "validatingadmissionpolicies"
		if obj.GetKind() == "ValidatingAdmissionPolicyBinding" {
			res = "validatingadmissionpolicybindings"
		}
		gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: res}
		if _, err := dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return objs, waitEnforced(ctx)
}

// waitEnforced waits until a dry-run of a blind removal is refused: policies
// take a moment to reach the admission plugin.
func waitEnforced(ctx context.Context) error {
	const key = "probe.teardown.dev/x"
	cm, err := admin.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "admission-probe", Finalizers: []string{key}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the probe: %w", err)
	}
	patch := removeAt(0, key)
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = admin.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.JSONPatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), hint), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the policy to be enforced (last answer: %v): %w", last, err) //nolint:errorlint // last is a message, err the cause
	}
	return nil
}

// removeAt is the JSON patch kubectl patch --type json users write: remove
// the finalizer at index i (tested, so a wrong index fails instead).
func removeAt(i int, key string) []byte {
	return fmt.Appendf(nil, `[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`, i, key, i)
}

// userConfig returns a rest.Config and a kubeconfig file for a new user who
// may edit namespace ns (the built-in edit ClusterRole): patch rights on
// ConfigMaps, and nothing cluster-wide.
func userConfig(t *testing.T, name, ns string) (*rest.Config, string) {
	t.Helper()
	cfg, err := env.AddUser(name)
	if err != nil {
		t.Fatal(err)
	}
	grant(t, ns, "User", name, "edit")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name, Namespace: ns}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return cfg, path
}

func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("vap-%d", time.Now().UnixNano()%1_000_000_000)
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller's ServiceAccount may edit it, as the install's
	// aggregated target grants would allow.
	grant(t, name, rbacv1.ServiceAccountKind, "teardown-system:teardown-controller", "edit")
	return name
}

// configMap creates a ConfigMap in ns with finalizers and annotations.
func configMap(t *testing.T, ns, name string, finalizers []string, annotations map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := admin.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers, Annotations: annotations},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Whatever a case leaves, the finalizers go at the end (as the
	// controller, which the policy lets through).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = controllerClient(t).CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	return cm
}

// grant binds clusterRole to a subject (User or ServiceAccount
// "namespace:name") within ns, and returns once it is in effect.
func grant(t *testing.T, ns, kind, subject, clusterRole string) {
	t.Helper()
	// Every role granted here lets its holder patch ConfigMaps in ns.
	may := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "configmaps"}
	s := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: subject}
	access := testenv.Access(kind, "", subject, may)
	if kind == rbacv1.ServiceAccountKind {
		saNS, saName, _ := strings.Cut(subject, ":")
		s = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: saNS, Name: saName}
		access = testenv.Access(kind, saNS, saName, may)
	}
	_, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "vap-test-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{s},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitAllowed(t.Context(), admin, access); err != nil {
		t.Fatal(err)
	}
}

// controllerClient is the administrator impersonating the
// teardown-controller's ServiceAccount, as the deployed controller
// authenticates. What it may do is that ServiceAccount's RBAC.
func controllerClient(t *testing.T) kubernetes.Interface {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: controllerUser}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
