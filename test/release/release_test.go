/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package release_test checks what make release-manifests writes; make
// release's own tool is tested in hack/tools/release, and make e2e runs a
// release end to end.
package release_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

func root(t *testing.T) string {
	t.Helper()
	dir, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReleaseManifestsApply: make release-manifests pins the image by the
// digest make image wrote, and the install.yaml it writes applies to the
// local control plane (server-side dry run).
func TestReleaseManifestsApply(t *testing.T) {
	testenv.SkipShort(t)
	dir := root(t)
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(assets, "kubectl")
	out := t.TempDir()
	digestFile := filepath.Join(out, "teardown-controller.digest")
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(digestFile, []byte(digest+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const repo = "registry.example.com/teardown/teardown-controller"
	cmd := exec.Command("make", "--no-print-directory", "release-manifests",
		"RELEASE_DIR="+out, "IMAGE_DIGEST_FILE="+digestFile, "IMG_REPO="+repo, "KUBECTL="+kubectl)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release-manifests: %v\n%s", err, b)
	}
	install := filepath.Join(out, "install.yaml")
	data, err := os.ReadFile(install)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("image: "+repo+"@"+digest+"\n")) {
		t.Errorf("install.yaml does not pin the image to %s@%s", repo, digest)
	}
	if bytes.Contains(data, []byte("image: teardown-controller:latest")) {
		t.Error("install.yaml still names teardown-controller:latest")
	}

	// Without a digest: IMG.
	cmd = exec.Command("make", "--no-print-directory", "release-manifests",
		"RELEASE_DIR="+filepath.Join(out, "tag"), "IMAGE_DIGEST_FILE="+filepath.Join(out, "missing"), "IMG=example.com/tdc:v9", "KUBECTL="+kubectl)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release-manifests: %v\n%s", err, b)
	}
	if tagged, err := os.ReadFile(filepath.Join(out, "tag", "install.yaml")); err != nil || !bytes.Contains(tagged, []byte("image: example.com/tdc:v9\n")) {
		t.Errorf("without a digest file install.yaml should name IMG (err %v)", err)
	}

	env, err := testenv.Start(testenv.Options{Controllers: []string{"namespace"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kc := func(args ...string) ([]byte, error) {
		return exec.Command(kubectl, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...).CombinedOutput()
	}
	// A dry run does not create the namespace its objects go in: create it
	// for real, as the first object of install.yaml would.
	if b, err := kc("create", "namespace", "teardown-system"); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b, err := kc("apply", "--server-side", "--dry-run=server", "--field-manager=teardown-install", "-f", install)
	if err != nil {
		t.Fatalf("kubectl apply --server-side --dry-run=server -f install.yaml: %v\n%s", err, b)
	}
	t.Logf("%s", b)
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/teardownpolicies.teardown.dev serverside-applied (server dry run)",
		"deployment.apps/teardown-controller serverside-applied (server dry run)",
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("apply output lacks %q", want)
		}
	}
}
