/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chains

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// corruptInEtcd overwrites the stored bytes of an object with garbage, as
// a damaged write leaves it: kube-apiserver can no longer decode it.
func corruptInEtcd(t *testing.T, key string) {
	t.Helper()
	plugintest.PutInEtcd(t, env.EtcdEndpoint(), key, plugintest.Undecodable)
}

// Family 6: an object kube-apiserver cannot decode. explain on it and on
// its namespace (whose deletion fails on it) must name the object and the
// documented remedy with its risk, not webhooks or API availability. The
// remedy's unsafe delete, run with kubectl as printed, then lets the
// namespace go.
func TestExplainCorruptObject(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ns := plugintest.NewNamespace(t, cs, "ledger")
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "accounts"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	corruptInEtcd(t, "/registry/configmaps/"+ns+"/accounts")
	// Whatever happens, the garbage collector and the namespace
	// controller of the other tests must not keep failing on it.
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "accounts", metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)})
	})

	rep := explain(t, plugin.ExitBlocked, "configmap/accounts", "-n", ns)
	f := plugintest.Root(rep, diagnose.CauseCorruptObject, "accounts")
	if !rep.Unreadable || f == nil || f.Catalog != "F1" || len(rep.RootBlockers) != 1 {
		t.Fatalf("no F1 root blocker:\n%s", plugintest.Dump(rep))
	}
	checkCorruptFinding(t, f, ns)
	text(t, "explain-corrupt.txt", "explain", "configmap/accounts", "-n", ns)

	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	explainUntil(t, 60*time.Second, diagnose.CauseCorruptObject, "accounts", "namespace/"+ns)
	poll(t, 60*time.Second, "the namespace controller's content failure", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionContentFailure && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	rep = explainUntil(t, 10*time.Second, diagnose.CauseCorruptObject, "accounts", "namespace/"+ns)
	if len(rep.RootBlockers) != 1 {
		t.Errorf("root blockers = %+v, want only the corrupt object", rep.RootBlockers)
	}
	if cf := plugintest.Find(rep, diagnose.CauseContentDeletionFailed, ns); cf == nil || cf.Catalog != "F1" || strings.Contains(cf.Remedy, "webhook") {
		t.Errorf("the namespace controller's failure is not filed under F1: %+v", cf)
	}
	f = plugintest.Root(rep, diagnose.CauseCorruptObject, "accounts")
	checkCorruptFinding(t, f, ns)
	r := text(t, "explain-corrupt-namespace.txt", "explain", "namespace/"+ns)
	if strings.Contains(r.Out, "webhook") {
		t.Errorf("explain blames a webhook:\n%s", r.Out)
	}

	// The remedy, run as printed.
	cmd := regexp.MustCompile(`kubectl delete --raw '([^']+)'`).FindStringSubmatch(f.Remedy)
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), "--kubeconfig", kubeconfig, "delete", "--raw", cmd[1]).CombinedOutput()
	if err != nil {
		t.Fatalf("the remedy %q: %v\n%s", cmd[0], err, out)
	}
	poll(t, 60*time.Second, "the namespace to go once the corrupt object is deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func checkCorruptFinding(t *testing.T, f *diagnose.Finding, ns string) {
	t.Helper()
	for _, want := range []string{"kube-apiserver cannot read ConfigMap " + ns + "/accounts from storage (etcd key /registry/configmaps/" + ns + "/accounts)", "corrupt object"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	for _, want := range []string{"kubectl delete --raw '/api/v1/namespaces/" + ns + "/configmaps/accounts?ignoreStoreReadErrorWithClusterBreakingPotential=true'", "AllowUnsafeMalformedObjectDeletion", "unsafe-delete-ignore-read-errors", "encryption"} {
		if !strings.Contains(f.Remedy, want) {
			t.Errorf("remedy %q lacks %q", f.Remedy, want)
		}
	}
	if !strings.Contains(f.Leaks, "skips finalizers") {
		t.Errorf("leaks %q", f.Leaks)
	}
}

// Issue 17, family 3's second shape, with the gate: a Secret encrypted with
// a key kube-apiserver no longer has (its encryption configuration lost or
// rotated without the old key). The API server calls it corrupt too; explain
// names it, with the key to put back first and the unsafe delete's risk.
func TestExplainCorruptEncryptedSecret(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ns := plugintest.NewNamespace(t, cs, "vault")
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password"}, StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	plugintest.PutInEtcd(t, env.EtcdEndpoint(), "/registry/secrets/"+ns+"/db-password", plugintest.EncryptedWithLostKey)
	t.Cleanup(func() {
		_ = cs.CoreV1().Secrets(ns).Delete(context.Background(), "db-password", metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)})
	})
	rep := explain(t, plugin.ExitBlocked, "secret/db-password", "-n", ns)
	f := plugintest.Root(rep, diagnose.CauseCorruptObject, "db-password")
	if !rep.Unreadable || f == nil || f.Catalog != "F1" || len(rep.RootBlockers) != 1 {
		t.Fatalf("no F1 root blocker:\n%s", plugintest.Dump(rep))
	}
	for _, want := range []string{"kube-apiserver cannot read Secret " + ns + "/db-password from storage", "identity transformer tried to read encrypted data"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	for _, want := range []string{"encryption-provider-config", "ignoreStoreReadErrorWithClusterBreakingPotential=true", "unsafe-delete-ignore-read-errors"} {
		if !strings.Contains(f.Remedy, want) {
			t.Errorf("remedy %q lacks %q", f.Remedy, want)
		}
	}
	if !strings.Contains(f.Leaks, "skips finalizers") {
		t.Errorf("leaks %q", f.Leaks)
	}
}
