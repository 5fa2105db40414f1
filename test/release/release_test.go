/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package release_test checks the release files goreleaser and make
// release-manifests use, since neither a release nor goreleaser runs here.
package release_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/testenv"
)

type goreleaser struct {
	Version int `json:"version"`
	Builds  []struct {
		ID      string   `json:"id"`
		Main    string   `json:"main"`
		Binary  string   `json:"binary"`
		Env     []string `json:"env"`
		GOOS    []string `json:"goos"`
		GOARCH  []string `json:"goarch"`
		LDFlags []string `json:"ldflags"`
	} `json:"builds"`
	Archives []struct {
		ID              string   `json:"id"`
		IDs             []string `json:"ids"`
		NameTemplate    string   `json:"name_template"`
		Formats         []string `json:"formats"`
		WrapInDirectory bool     `json:"wrap_in_directory"`
		FormatOverrides []struct {
			GOOS    string   `json:"goos"`
			Formats []string `json:"formats"`
		} `json:"format_overrides"`
		Files []string `json:"files"`
	} `json:"archives"`
	Checksum struct {
		NameTemplate string `json:"name_template"`
		Algorithm    string `json:"algorithm"`
	} `json:"checksum"`
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// krewPlatform is one platform of .krew.yaml: the archive its URL names
// (with {{ .TagName }} as given) and the binary in it.
type krewPlatform struct {
	os, arch, archive, bin string
}

var krewURL = regexp.MustCompile(`releases/download/\{\{ \.TagName \}\}/([^"]+)"`)

func krewPlatforms(t *testing.T, dir string) []krewPlatform {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []krewPlatform
	var cur *krewPlatform
	for _, line := range strings.Split(string(data), "\n") {
		field := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(field, "os: "):
			out = append(out, krewPlatform{os: strings.TrimPrefix(field, "os: ")})
			cur = &out[len(out)-1]
		case strings.HasPrefix(field, "arch: ") && cur != nil:
			cur.arch = strings.TrimPrefix(field, "arch: ")
		case strings.HasPrefix(field, "bin: ") && cur != nil:
			cur.bin = strings.TrimPrefix(field, "bin: ")
		case krewURL.MatchString(field) && cur != nil:
			cur.archive = krewURL.FindStringSubmatch(field)[1]
		}
	}
	if len(out) == 0 {
		t.Fatal(".krew.yaml names no platform")
	}
	return out
}

// TestGoreleaserBuildsWhatKrewNames: every archive .krew.yaml points at is
// one .goreleaser.yaml makes (name, format, platform), holds the binary at
// the path krew runs and the LICENSE; the binaries carry the version.
func TestGoreleaserBuildsWhatKrewNames(t *testing.T) {
	dir := root(t)
	data, err := os.ReadFile(filepath.Join(dir, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg goreleaser
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if cfg.Version != 2 {
		t.Errorf("version %d, want 2 (goreleaser v2 syntax: archives.ids, archives.formats)", cfg.Version)
	}
	if cfg.Checksum.NameTemplate == "" {
		t.Error("no checksum file")
	}
	builds := map[string]int{}
	for i, b := range cfg.Builds {
		builds[b.ID] = i
		for _, v := range []string{"Version={{ .Tag }}", "Commit={{ .FullCommit }}", "Date="} {
			if !slices.ContainsFunc(b.LDFlags, func(f string) bool {
				return strings.Contains(f, "-X github.com/teardown-dev/teardown/internal/version."+v)
			}) {
				t.Errorf("build %s: no -X ...internal/version.%s in ldflags", b.ID, v)
			}
		}
		if !slices.Contains(b.Env, "CGO_ENABLED=0") {
			t.Errorf("build %s: not static (CGO_ENABLED=0)", b.ID)
		}
		for _, goos := range []string{"linux", "darwin", "windows"} {
			if !slices.Contains(b.GOOS, goos) {
				t.Errorf("build %s: no %s", b.ID, goos)
			}
		}
		for _, arch := range []string{"amd64", "arm64"} {
			if !slices.Contains(b.GOARCH, arch) {
				t.Errorf("build %s: no %s", b.ID, arch)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, b.Main)); err != nil {
			t.Errorf("build %s: main %s: %v", b.ID, b.Main, err)
		}
	}
	for _, want := range []string{"teardown-controller", "kubectl-teardown"} {
		if _, ok := builds[want]; !ok {
			t.Errorf("no build %s", want)
		}
	}
	plugin := -1
	for i, a := range cfg.Archives {
		if slices.Contains(a.IDs, "kubectl-teardown") {
			plugin = i
		}
		if !slices.Contains(a.Files, "LICENSE") {
			t.Errorf("archive %s lacks the LICENSE", a.ID)
		}
		for _, f := range a.Files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("archive %s: %v", a.ID, err)
			}
		}
	}
	if plugin < 0 {
		t.Fatal("no archive of the kubectl-teardown build")
	}
	archive := cfg.Archives[plugin]
	if archive.WrapInDirectory {
		t.Error("the plugin archive wraps its files in a directory; .krew.yaml's bin expects the binary at the root")
	}
	build := cfg.Builds[builds["kubectl-teardown"]]
	name := template.Must(template.New("name").Option("missingkey=error").Parse(archive.NameTemplate))
	const tag = "v1.2.3"
	for _, p := range krewPlatforms(t, dir) {
		var b bytes.Buffer
		if err := name.Execute(&b, map[string]string{"Tag": tag, "Version": strings.TrimPrefix(tag, "v"), "Os": p.os, "Arch": p.arch, "ProjectName": "teardown"}); err != nil {
			t.Fatalf("name_template: %v", err)
		}
		format := archive.Formats[0]
		for _, o := range archive.FormatOverrides {
			if o.GOOS == p.os {
				format = o.Formats[0]
			}
		}
		got := b.String() + "." + format
		want := strings.ReplaceAll(p.archive, "{{ .TagName }}", tag)
		if got != want {
			t.Errorf("%s/%s: goreleaser makes %s, .krew.yaml downloads %s", p.os, p.arch, got, want)
		}
		if !slices.Contains(build.GOOS, p.os) || !slices.Contains(build.GOARCH, p.arch) {
			t.Errorf("%s/%s: .krew.yaml names it, kubectl-teardown is not built for it", p.os, p.arch)
		}
		binary := build.Binary
		if p.os == "windows" {
			binary += ".exe" // goreleaser adds it
		}
		if p.bin != binary {
			t.Errorf("%s/%s: .krew.yaml runs %s, the archive holds %s", p.os, p.arch, p.bin, binary)
		}
	}
	license, err := os.ReadFile(filepath.Join(dir, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "END OF TERMS AND CONDITIONS"} {
		if !bytes.Contains(license, []byte(want)) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
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
