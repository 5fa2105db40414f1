/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package unseen

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/plugin/plugintest"
)

// Issue 17, family 3: an object kube-apiserver cannot read from storage, on
// a control plane without the AllowUnsafeMalformedObjectDeletion feature
// gate (alpha: off by default in every release so far), so the API server
// does not say "corrupt object" but its storage layer's raw words: the
// decoder's for bytes no codec reads, the transformer's for an object
// encrypted with a key it no longer has ("identity transformer tried to
// read encrypted data", as after a control-plane rebuild that lost its
// encryption configuration). explain must name the
// object as unreadable from storage, with the documented remedy (the unsafe
// delete, the gate it needs and the verb unsafe-delete-ignore-read-errors)
// and its risk. The negative control: a readable sibling is not corrupt.
func TestCorruptWithoutFeatureGate(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	ns := plugintest.NewNamespace(t, cs, "ledger")
	for _, tc := range []struct {
		name, resource, object string
		create                 func() error
		bytes                  []byte
		// says is the API server's own words, repeated.
		says string
	}{
		{"undecodable bytes", "configmaps", "accounts", func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "accounts"}}, metav1.CreateOptions{})
			return err
		}, plugintest.Undecodable, "illegal base64 data"},
		{"encrypted with a lost key", "secrets", "db-password", func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password"}, StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
			return err
		}, plugintest.EncryptedWithLostKey, "identity transformer tried to read encrypted data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.create(); err != nil {
				t.Fatal(err)
			}
			key := "/registry/" + tc.resource + "/" + ns + "/" + tc.object
			good := plugintest.GetFromEtcd(t, env.EtcdEndpoint(), key)
			plugintest.PutInEtcd(t, env.EtcdEndpoint(), key, tc.bytes)
			// Without the gate nothing can delete it through the API:
			// put the object back, so no controller of the other
			// scenarios keeps failing on it.
			t.Cleanup(func() { plugintest.PutInEtcd(t, env.EtcdEndpoint(), key, good) })

			target := []string{tc.resource + "/" + tc.object, "-n", ns}
			rep := explain(t, target...)
			f := root(t, rep, "CorruptObject")
			if !rep.Unreadable || f.Catalog != "F1" || len(rep.RootBlockers) != 1 {
				t.Fatalf("want one F1 root blocker on an unreadable target; report:\n%s", dump(rep))
			}
			mustContain(t, "message", f.Message, "kube-apiserver cannot read", ns+"/"+tc.object+" from storage", tc.says)
			mustContain(t, "remedy", f.Remedy, "ignoreStoreReadErrorWithClusterBreakingPotential=true", "AllowUnsafeMalformedObjectDeletion", "unsafe-delete-ignore-read-errors", "encryption")
			mustContain(t, "leaks", f.Leaks, "skips finalizers")
			out := text(target...).Out
			mustContain(t, "explain", out, "CorruptObject")
		})
	}
	t.Run("a readable sibling (negative control)", func(t *testing.T) {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "readable"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rep := explain(t, "configmaps/readable", "-n", ns)
		if rep.Unreadable || strings.Contains(dump(rep), "CorruptObject") {
			t.Fatalf("a readable object is called corrupt:\n%s", dump(rep))
		}
		_ = cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "readable", metav1.DeleteOptions{})
	})
}
