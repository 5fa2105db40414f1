/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admission

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/teardown-dev/teardown/internal/plugin"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// TestShippedPolicyExemptsTheShippedServiceAccount checks that the identity
// config/default exempts is the ServiceAccount it runs the controller as.
func TestShippedPolicyExemptsTheShippedServiceAccount(t *testing.T) {
	testenv.SkipShort(t)
	exempting := map[string]bool{}
	for _, obj := range installed {
		if obj.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		conds, _, _ := unstructuredSlice(obj.Object, "spec", "matchConditions")
		for _, c := range conds {
			if c["name"] != "not-the-controller" {
				continue
			}
			expr, _ := c["expression"].(string)
			want := `request.userInfo.username != 'system:serviceaccount:' + 'teardown-system' + ':' + 'teardown-controller'`
			if strings.Join(strings.Fields(expr), " ") != want {
				t.Errorf("%s: not-the-controller = %q, want %q", obj.GetName(), expr, want)
			}
			exempting[obj.GetName()] = true
		}
	}
	// Both policies that guard objects exempt the controller, kept in step
	// by config/default's replacements.
	for _, name := range []string{"teardown-protect-finalizers", "teardown-protect-records"} {
		if !exempting[name] {
			t.Errorf("no matchCondition not-the-controller in %s", name)
		}
	}
}

func unstructuredSlice(obj map[string]any, fields ...string) ([]map[string]any, bool, error) {
	cur := any(obj)
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[f]
	}
	items, ok := cur.([]any)
	if !ok {
		return nil, false, nil
	}
	var out []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, true, nil
}

// releaseRecord is an annotation value as kubectl teardown release writes it.
func releaseRecord(key, reason string) string {
	v, _ := json.Marshal(map[string]string{"finalizer": key, "reason": reason, "user": "someone", "time": "2026-11-22T10:00:00Z"})
	return string(v)
}

// mergeRemoval is a merge patch leaving only keep in the finalizers, with
// extra annotations.
func mergeRemoval(keep []string, annotations map[string]string) []byte {
	meta := map[string]any{"finalizers": keep}
	if keep == nil {
		meta["finalizers"] = nil
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	b, _ := json.Marshal(map[string]any{"metadata": meta})
	return b
}

// TestBlindRemovalIsRefused: a user who may patch ConfigMaps removes
// finalizers the way `kubectl patch` does. Teardown's keys (by domain, or
// attached or started by Teardown as the annotations show) are refused with
// a message naming kubectl teardown release, unless the same request
// records a release naming the key; other finalizers are let through.
func TestBlindRemovalIsRefused(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	userCfg, _ := userConfig(t, "alice", ns)
	alice := clientFor(t, userCfg)

	nsKey := ns + ".teardown.dev/x"
	custom := "my.custom/finalizer"
	long := "a-very-long-domain.example.com/" + strings.Repeat("x", 40)
	longSibling := "a-very-long-domain.example.com/" + strings.Repeat("x", 39) + "y"
	old := releaseRecord(nsKey, "an older release")

	cases := []struct {
		name        string
		finalizers  []string
		annotations map[string]string
		// deleting deletes the object first.
		deleting bool
		// patch is JSON patch if it starts with "[", else a merge patch.
		patch   []byte
		refused string // the removed key the refusal names; "" = allowed
	}{
		{name: "namespace policy key, JSON patch", finalizers: []string{"example.com/other", nsKey},
			patch: removeAt(1, nsKey), refused: nsKey},
		{name: "cluster policy key, merge patch", finalizers: []string{"teardown.dev/dns"},
			patch: mergeRemoval(nil, nil), refused: "teardown.dev/dns"},
		{name: "teardown key on an object being deleted", finalizers: []string{nsKey}, deleting: true,
			patch: removeAt(0, nsKey), refused: nsKey},
		{name: "custom key Teardown attached", finalizers: []string{custom},
			annotations: map[string]string{finalizer.AttachedAnnotation(custom): "true"},
			patch:       removeAt(0, custom), refused: custom},
		{name: "custom key whose cleanup started", finalizers: []string{custom}, deleting: true,
			annotations: map[string]string{finalizer.ProgressAnnotation(custom): `{"attempts":1}`},
			patch:       removeAt(0, custom), refused: custom},
		{name: "long custom key attached under a hashed name", finalizers: []string{long},
			annotations: map[string]string{finalizer.AttachedAnnotation(long): "true"},
			patch:       removeAt(0, long), refused: long},
		{name: "long key sharing the first 46 characters of an attached one is protected too", finalizers: []string{longSibling, long},
			annotations: map[string]string{finalizer.AttachedAnnotation(long): "true"},
			patch:       removeAt(0, longSibling), refused: longSibling},
		{name: "unrelated finalizer", finalizers: []string{"example.com/other", nsKey},
			patch: removeAt(0, "example.com/other")},
		{name: "custom key Teardown did not attach", finalizers: []string{custom},
			annotations: map[string]string{finalizer.AttachedAnnotation("other.custom/finalizer"): "true"},
			patch:       removeAt(0, custom)},
		{name: "unrelated finalizer removed, teardown key kept, merge patch", finalizers: []string{"example.com/other", nsKey},
			patch: mergeRemoval([]string{nsKey}, nil)},
		{name: "with a new release record naming the key", finalizers: []string{nsKey}, deleting: true,
			patch: mergeRemoval(nil, map[string]string{plugin.AuditAnnotation: releaseRecord(nsKey, "bucket deleted by hand")})},
		{name: "release record not newly written", finalizers: []string{nsKey},
			annotations: map[string]string{plugin.AuditAnnotation: old},
			patch:       mergeRemoval(nil, map[string]string{plugin.AuditAnnotation: old}), refused: nsKey},
		{name: "release record naming another key", finalizers: []string{nsKey},
			patch:   mergeRemoval(nil, map[string]string{plugin.AuditAnnotation: releaseRecord("teardown.dev/other", "x")}),
			refused: nsKey},
		{name: "one record cannot release two keys", finalizers: []string{nsKey, "teardown.dev/dns"},
			patch:   mergeRemoval(nil, map[string]string{plugin.AuditAnnotation: releaseRecord(nsKey, "x")}),
			refused: "teardown.dev/dns"},
		{name: "adding a teardown key is not a removal", finalizers: []string{"example.com/other"},
			patch: mergeRemoval([]string{"example.com/other", nsKey}, nil)},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "cm-" + string(rune('a'+i))
			cm := configMap(t, ns, name, tc.finalizers, tc.annotations)
			if tc.deleting {
				if err := admin.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			pt := types.MergePatchType
			if bytes.HasPrefix(tc.patch, []byte("[")) {
				pt = types.JSONPatchType
			}
			_, err := alice.CoreV1().ConfigMaps(ns).Patch(t.Context(), name, pt, tc.patch, metav1.PatchOptions{})
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			want := "use kubectl teardown release configmaps/" + name + " -n " + ns + " --finalizer " + tc.refused + " --reason TEXT"
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want Forbidden saying %q", err, want)
			}
			after, gerr := admin.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
			if gerr != nil || !slices.Equal(after.Finalizers, cm.Finalizers) {
				t.Errorf("finalizers after a refusal: %v (%v), want %v", after.Finalizers, gerr, cm.Finalizers)
			}
		})
	}
}

// TestUpdateIsRefusedToo: a full update (kubectl edit, replace) is judged
// like a patch.
func TestUpdateIsRefusedToo(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	userCfg, _ := userConfig(t, "bob", ns)
	cm := configMap(t, ns, "edited", []string{"teardown.dev/dns"}, nil)
	cm.Finalizers = nil
	_, err := clientFor(t, userCfg).CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), hint) {
		t.Fatalf("update removing teardown.dev/dns: %v, want Forbidden saying %q", err, hint)
	}
}

// TestControllerIsExempt: the teardown-controller's ServiceAccount removes
// Teardown's keys, attached or by domain, on live objects and objects being
// deleted, with no record.
func TestControllerIsExempt(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	ctrl := controllerClient(t)
	custom := "my.custom/finalizer"
	cm := configMap(t, ns, "guarded", []string{ns + ".teardown.dev/x", custom, "teardown.dev/dns"},
		map[string]string{finalizer.AttachedAnnotation(custom): "true"})
	if _, err := ctrl.CoreV1().ConfigMaps(ns).Patch(t.Context(), cm.Name, types.JSONPatchType, removeAt(1, custom), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the controller removing an attached key: %v", err)
	}
	if err := admin.CoreV1().ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.CoreV1().ConfigMaps(ns).Patch(t.Context(), cm.Name, types.MergePatchType, mergeRemoval(nil, nil), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the controller removing its keys from an object being deleted: %v", err)
	}
	if _, err := admin.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap is still there: %v", err)
	}
	// Another ServiceAccount of the same name elsewhere is not the controller.
	cfg := *env.Config
	cfg.Impersonate.UserName = "system:serviceaccount:" + ns + ":teardown-controller"
	grant(t, ns, "ServiceAccount", ns+":teardown-controller", "edit")
	other := configMap(t, ns, "other", []string{"teardown.dev/dns"}, nil)
	_, err := clientFor(t, &cfg).CoreV1().ConfigMaps(ns).Patch(t.Context(), other.Name, types.MergePatchType, mergeRemoval(nil, nil), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), hint) {
		t.Fatalf("a look-alike ServiceAccount: %v, want Forbidden", err)
	}
}

// TestKubectlTeardownReleasePasses runs `kubectl teardown release --yes` as
// a user who may edit the namespace: its dry-run and its guarded patch get
// through the policy, since both write the release record naming the key.
func TestKubectlTeardownReleasePasses(t *testing.T) {
	testenv.SkipShort(t)
	ns := newNamespace(t)
	_, kubeconfig := userConfig(t, "carol", ns)
	key := ns + ".teardown.dev/web-dns"
	cm := configMap(t, ns, "web", []string{key, "example.com/keep"}, nil)
	if err := admin.CoreV1().ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	root := plugin.NewRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	root.SetArgs([]string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir(), "release", "configmap/web", "-n", ns,
		"--finalizer", key, "--reason", "DNS records removed by hand", "--yes", "--audit-log", filepath.Join(t.TempDir(), "audit.jsonl")})
	root.SetContext(t.Context())
	if err := root.Execute(); err != nil {
		t.Fatalf("release: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	after, err := admin.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after.Finalizers, []string{"example.com/keep"}) || !strings.Contains(after.Annotations[plugin.AuditAnnotation], `"finalizer":"`+key+`"`) {
		t.Errorf("after release: finalizers %v, record %q\n%s", after.Finalizers, after.Annotations[plugin.AuditAnnotation], out.String())
	}
}
