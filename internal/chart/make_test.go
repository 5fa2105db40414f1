/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// pathWithoutKubectl returns a PATH with every directory of PATH but with no
// kubectl in it: the directories that hold one are replaced by a folder of
// links to their other files.
func pathWithoutKubectl(t *testing.T) string {
	t.Helper()
	var dirs []string
	for i, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "kubectl")); err != nil {
			dirs = append(dirs, dir)
			continue
		}
		links := filepath.Join(t.TempDir(), "path", string(rune('a'+i)))
		if err := os.MkdirAll(links, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "kubectl" {
				if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(links, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		dirs = append(dirs, links)
	}
	path := strings.Join(dirs, string(os.PathListSeparator))
	if p, err := exec.Command("sh", "-c", "PATH='"+path+"' command -v kubectl").Output(); err == nil {
		t.Fatalf("a kubectl is still on the PATH: %s", p)
	}
	return path
}

// TestMakeTargetsOnFreshClone: on a fresh clone (of the last commit), with
// no bin/k8s and no kubectl on the PATH, make release-manifests writes
// install.yaml (what kubectl kustomize makes of config/default, image set)
// and the chart package, and make deploy pipes the same to the kubectl on
// the PATH (a stand-in here: this test leaves the control plane alone), or
// says that there is none.
// Before, both failed with "bin/k8s/kubectl: No such file or directory".
func TestMakeTargetsOnFreshClone(t *testing.T) {
	testenv.SkipShort(t)
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	if out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", root, repo).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	// helm is a declared prerequisite that make would build (hack/helm.sh);
	// copied in, newer than its pin, to keep the test short.
	copyFile(t, helmPath, filepath.Join(repo, "bin", "helm"))
	path := pathWithoutKubectl(t)
	makeIn := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-C", repo, "--no-print-directory"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	const img = "registry.example.com/teardown-controller:v9.9.9"
	out := filepath.Join(tmp, "release")
	makeIn("release-manifests", "RELEASE_DIR="+out, "IMG="+img, "IMAGE_DIGEST_FILE="+filepath.Join(tmp, "none"))
	got, err := os.ReadFile(filepath.Join(out, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The control plane's kubectl (make test sets KUBEBUILDER_ASSETS).
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	want, err := exec.Command(kubectl, "kustomize", filepath.Join(repo, "config/default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	if w := strings.Replace(string(want), "image: teardown-controller:latest\n", "image: "+img+"\n", 1); string(got) != w {
		t.Errorf("install.yaml is not kubectl kustomize config/default with the image %s", img)
	}
	if _, err := os.Stat(filepath.Join(out, "teardown-0.1.0.tgz")); err != nil {
		t.Errorf("no chart package: %v", err)
	}

	// make deploy with no KUBECTL: the kubectl on the PATH, here a stand-in
	// that records what it was asked to apply.
	fake := filepath.Join(tmp, "fakebin")
	if err := os.MkdirAll(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(tmp, "applied")
	script := "#!/bin/sh\necho \"$*\" > " + record + ".args\ncat > " + record + ".yaml\n"
	if err := os.WriteFile(filepath.Join(fake, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	path = fake + string(os.PathListSeparator) + path
	makeIn("deploy", "IMG="+img)
	args, _ := os.ReadFile(record + ".args")
	applied, _ := os.ReadFile(record + ".yaml")
	if strings.TrimSpace(string(args)) != "apply -f -" || string(applied) != string(got) {
		t.Errorf("make deploy ran kubectl %q with %d bytes; want apply -f - with install.yaml's %d", args, len(applied), len(got))
	}
	// And without any kubectl, it says so.
	path = strings.TrimPrefix(path, fake+string(os.PathListSeparator))
	cmd := exec.Command("make", "-C", repo, "--no-print-directory", "deploy")
	cmd.Env = append(os.Environ(), "PATH="+path)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "deploy: no kubectl (kubectl): put one on PATH or set KUBECTL") {
		t.Errorf("make deploy without a kubectl: %v\n%s", err, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
