/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	testVersion = "v0.0.0-imagetest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2026-01-02T03:04:05Z"
)

var bothPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// testPlatforms are the platforms TestControllerImage cross-compiles the
// controller for: IMAGE_TEST_PLATFORMS (comma-separated, as make image's
// IMAGE_PLATFORMS), else both. make test sets this machine's platform alone,
// since each platform more compiles the controller's whole dependency tree
// again (on a cold build cache, most of the test's time); make image-test,
// a release target, checks both.
func testPlatforms(t *testing.T) []v1.Platform {
	t.Helper()
	env := os.Getenv("IMAGE_TEST_PLATFORMS")
	if env == "" {
		return bothPlatforms
	}
	var ps []v1.Platform
	for _, s := range strings.Split(env, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			t.Fatalf("IMAGE_TEST_PLATFORMS: %v", err)
		}
		ps = append(ps, *p)
	}
	return ps
}

// TestReproducible builds the image of a tiny stand-in program twice, as two
// machines would: from two checkouts at different paths, the second with an
// empty Go build cache, so the compile runs again. It wants the same index
// digest and byte-identical layouts and tarballs. (The controller itself is
// built once, by TestControllerImage: its cross-compile is what costs time;
// docs/install-image.md says how to compare two real builds.)
func TestReproducible(t *testing.T) {
	var results []*Result
	var outs []string
	for i := range 2 {
		src := t.TempDir()
		writeFile(t, filepath.Join(src, "go.mod"), "module example.com/standin\n\ngo 1.26.0\n")
		writeFile(t, filepath.Join(src, "main.go"), "package main\n\nfunc main() { println(\"stand-in\") }\n")
		dir := t.TempDir()
		o := options(src, ".", filepath.Join(dir, "layout"))
		if i == 1 {
			o.Env = []string{"GOCACHE=" + t.TempDir()}
		}
		o.Tarball = filepath.Join(dir, "image.tar")
		o.DigestFile = filepath.Join(dir, "digest")
		res, err := Build(context.Background(), o)
		if err != nil {
			t.Fatalf("build %d: %v", i+1, err)
		}
		results = append(results, res)
		outs = append(outs, dir)
	}
	if results[0].Index != results[1].Index {
		t.Fatalf("two builds, two index digests: %s and %s", results[0].Index, results[1].Index)
	}
	a, b := tree(t, filepath.Join(outs[0], "layout")), tree(t, filepath.Join(outs[1], "layout"))
	if len(a) != len(b) {
		t.Fatalf("layouts differ: %d and %d files", len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("layouts differ in %s", name)
		}
	}
	for _, name := range []string{"image.tar", "digest"} {
		if x, y := readFile(t, filepath.Join(outs[0], name)), readFile(t, filepath.Join(outs[1], name)); !bytes.Equal(x, y) {
			t.Errorf("two builds wrote different %s", name)
		}
	}
	if got := strings.TrimSpace(string(readFile(t, filepath.Join(outs[0], "digest")))); got != results[0].Index.String() {
		t.Errorf("digest file says %q, want %s", got, results[0].Index)
	}
	checkLayout(t, filepath.Join(outs[0], "layout"), bothPlatforms, "example.com/standin")
}

// TestControllerImage builds the real teardown-controller image, as make
// image does, and checks every platform's config, files, binary and SBOM.
func TestControllerImage(t *testing.T) {
	repo, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if gomod, err := os.ReadFile(filepath.Join(repo, "go.mod")); err != nil || !strings.HasPrefix(string(gomod), "module "+ModulePath+"\n") {
		t.Fatalf("%s is not the root of %s: %v", repo, ModulePath, err)
	}
	dir := t.TempDir()
	o := options(repo, "./cmd/teardown-controller", filepath.Join(dir, "layout"))
	o.Platforms = testPlatforms(t)
	o.BinDir = filepath.Join(dir, "bin")
	start := time.Now()
	res, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %s", res.Index, time.Since(start).Round(time.Millisecond))
	checkLayout(t, o.Out, o.Platforms, ModulePath, "sigs.k8s.io/controller-runtime", "k8s.io/client-go")

	// The -ldflags reached internal/version: run the binary of this machine.
	bin := filepath.Join(o.BinDir, "linux-"+runtime.GOARCH, o.Name)
	if runtime.GOOS == "linux" && fileExists(bin) {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", bin, err, out)
		}
		for _, want := range []string{testVersion, testCommit, testDate} {
			if !strings.Contains(string(out), want) {
				t.Errorf("--version printed %q, want %s in it", out, want)
			}
		}
	}
}

func options(repo, pkg, out string) Options {
	return Options{
		Repo: repo, Package: pkg, Name: "teardown-controller", Platforms: bothPlatforms,
		Version: testVersion, Commit: testCommit, Date: testDate, Out: out,
	}
}

// checkLayout loads the layout as a registry client would and checks it.
func checkLayout(t *testing.T, dir string, platforms []v1.Platform, modules ...string) {
	t.Helper()
	lp := layout.Path(dir)
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var index *v1.Descriptor
	sboms := map[v1.Hash]v1.Descriptor{} // by subject
	for _, d := range topManifest.Manifests {
		switch {
		case d.MediaType == types.OCIImageIndex:
			if index != nil {
				t.Fatalf("index.json lists two image indexes")
			}
			if d.Annotations[refNameKey] != testVersion {
				t.Errorf("index.json: ref.name %q, want %q (skopeo copy oci:DIR:%s)", d.Annotations[refNameKey], testVersion, testVersion)
			}
			index = &d
		case d.MediaType == types.OCIManifestSchema1 && d.ArtifactType == SPDXMediaType:
			raw := blob(t, lp, d.Digest)
			var m v1.Manifest
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if m.ArtifactType != SPDXMediaType || m.Subject == nil || m.Config.MediaType != EmptyMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != SPDXMediaType {
				t.Fatalf("SBOM manifest %s is not an OCI 1.1 SPDX referrer: %s", d.Digest, raw)
			}
			if got := blob(t, lp, m.Config.Digest); string(got) != "{}" {
				t.Errorf("SBOM config is %q, want {}", got)
			}
			sboms[m.Subject.Digest] = m.Layers[0]
		default:
			t.Errorf("index.json lists an unexpected %s (%s)", d.MediaType, d.ArtifactType)
		}
	}
	if index == nil {
		t.Fatal("index.json lists no image index")
	}
	idx, err := top.ImageIndex(index.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || im.Annotations["org.opencontainers.image.version"] != testVersion {
		t.Errorf("image index: media type %s, annotations %v", im.MediaType, im.Annotations)
	}
	if len(im.Manifests) != len(platforms) {
		t.Fatalf("image index has %d manifests, want %d", len(im.Manifests), len(platforms))
	}
	for i, want := range platforms {
		d := im.Manifests[i]
		t.Run(want.String(), func(t *testing.T) {
			if d.Platform == nil || d.Platform.OS != want.OS || d.Platform.Architecture != want.Architecture {
				t.Fatalf("manifest %d is for %v, want %s", i, d.Platform, want.String())
			}
			if d.MediaType != types.OCIManifestSchema1 || d.ArtifactType != "" {
				t.Errorf("manifest %d: media type %s, artifactType %q", i, d.MediaType, d.ArtifactType)
			}
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img, want)
			sbom, ok := sboms[d.Digest]
			if !ok {
				t.Fatalf("no SBOM refers to %s", d.Digest)
			}
			checkSBOM(t, blob(t, lp, sbom.Digest), binarySum(t, img), modules)
		})
	}
	if len(sboms) != len(platforms) {
		t.Errorf("%d SBOMs for %d platforms", len(sboms), len(platforms))
	}
}

func checkImage(t *testing.T, img v1.Image, p v1.Platform) {
	t.Helper()
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("config media type %s", m.Config.MediaType)
	}
	for _, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("layer media type %s", l.MediaType)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config is for %s/%s, want %s", cf.OS, cf.Architecture, p.String())
	}
	if strings.Join(c.Entrypoint, " ") != BinaryPath || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q; want [%s] and none", c.Entrypoint, c.Cmd, BinaryPath)
	}
	if c.User != "65532:65532" || c.WorkingDir != "/" {
		t.Errorf("user %q, working dir %q; want 65532:65532 and /", c.User, c.WorkingDir)
	}
	if !strings.Contains(strings.Join(c.Env, "\n"), "SSL_CERT_FILE="+CABundlePath) {
		t.Errorf("env %q lacks SSL_CERT_FILE", c.Env)
	}
	if got := cf.Created.UTC().Format(time.RFC3339); got != testDate {
		t.Errorf("created %s, want the commit date %s", got, testDate)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":       "teardown-controller",
		"org.opencontainers.image.source":      projectURL,
		"org.opencontainers.image.url":         projectURL,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     testVersion,
		"org.opencontainers.image.revision":    testCommit,
		"org.opencontainers.image.created":     testDate,
		"org.opencontainers.image.description": "",
	}
	for k, want := range wantLabels {
		if got, ok := c.Labels[k]; !ok || (want != "" && got != want) || got == "" {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	files := extract(t, img)
	for _, name := range []string{"etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group", "teardown-controller"} {
		if _, ok := files[name]; !ok {
			t.Errorf("no /%s in the image", name)
		}
	}
	if tmp, ok := files["tmp"]; !ok || tmp.hdr.Typeflag != tar.TypeDir || tmp.hdr.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp is not a 1777 directory: %+v", tmp.hdr)
	}
	for name, f := range files {
		if !f.hdr.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("/%s has time %s, want the Unix epoch", name, f.hdr.ModTime)
		}
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") || !strings.Contains(string(files["etc/group"].data), "nonroot:x:65532:") {
		t.Errorf("no nonroot 65532 in /etc/passwd or /etc/group:\n%s\n%s", files["etc/passwd"].data, files["etc/group"].data)
	}
	pool, n := x509.NewCertPool(), 0
	for rest := files["etc/ssl/certs/ca-certificates.crt"].data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("CA bundle: %v", err)
		}
		pool.AddCert(cert)
		n++
	}
	if n < 100 {
		t.Errorf("CA bundle has %d certificates", n)
	}

	bin := files["teardown-controller"]
	if bin.hdr.Mode&0o777 != 0o755 {
		t.Errorf("/teardown-controller mode %o", bin.hdr.Mode)
	}
	ef, err := elf.NewFile(bytes.NewReader(bin.data))
	if err != nil {
		t.Fatalf("/teardown-controller is not ELF: %v", err)
	}
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if ef.Machine != wantMachine || ef.Type != elf.ET_EXEC {
		t.Errorf("/teardown-controller is %s %s, want %s ET_EXEC", ef.Machine, ef.Type, wantMachine)
	}
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("/teardown-controller is dynamically linked (%s)", prog.Type)
		}
	}
	if libs, _ := ef.ImportedLibraries(); len(libs) != 0 {
		t.Errorf("/teardown-controller needs %v", libs)
	}
}

func checkSBOM(t *testing.T, raw []byte, binSHA256 string, modules []string) {
	t.Helper()
	var doc spdxDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("SBOM: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.SPDXID != "SPDXRef-DOCUMENT" || doc.DataLicense != "CC0-1.0" || doc.DocumentNamespace == "" || doc.CreationInfo.Created != testDate {
		t.Errorf("SBOM header: %+v", doc)
	}
	ids := map[string]bool{"SPDXRef-DOCUMENT": true}
	names := map[string]spdxPackage{}
	withSum := 0
	for _, p := range doc.Packages {
		if ids[p.SPDXID] {
			t.Errorf("SBOM: SPDXID %s twice", p.SPDXID)
		}
		ids[p.SPDXID] = true
		names[p.Name] = p
		if len(p.Checksums) > 0 {
			withSum++
		}
	}
	for _, f := range doc.Files {
		ids[f.SPDXID] = true
		if f.FileName == BinaryPath {
			for _, c := range f.Checksums {
				if c.Algorithm == "SHA256" && c.Value != binSHA256 {
					t.Errorf("SBOM: %s SHA256 %s, the image's is %s", BinaryPath, c.Value, binSHA256)
				}
			}
		}
	}
	for _, r := range doc.Relationships {
		if !ids[r.Element] || !ids[r.Related] {
			t.Errorf("SBOM: relationship %+v names an unknown element", r)
		}
	}
	for _, m := range modules {
		if _, ok := names[m]; !ok {
			t.Errorf("SBOM names no %s", m)
		}
	}
	if main := names[modules[0]]; main.VersionInfo != testVersion {
		t.Errorf("SBOM: %s version %q, want %s", modules[0], main.VersionInfo, testVersion)
	}
	if len(modules) > 1 {
		if cr := names["sigs.k8s.io/controller-runtime"]; len(cr.Checksums) != 1 || cr.Checksums[0].Algorithm != "SHA256" || len(cr.Checksums[0].Value) != 64 || !strings.HasPrefix(cr.VersionInfo, "v") {
			t.Errorf("SBOM: controller-runtime has no version or go.sum checksum: %+v", cr)
		}
	}
	if _, ok := names["stdlib"]; !ok {
		t.Error("SBOM names no stdlib")
	}
}

type file struct {
	hdr  *tar.Header
	data []byte
}

func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(strings.TrimPrefix(h.Name, "/"), "/")] = file{hdr: h, data: data}
	}
}

func binarySum(t *testing.T, img v1.Image) string {
	sum := sha256.Sum256(extract(t, img)["teardown-controller"].data)
	return hex.EncodeToString(sum[:])
}

func blob(t *testing.T, lp layout.Path, h v1.Hash) []byte {
	t.Helper()
	rc, err := lp.Blob(h)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// tree reads every file under dir, by relative path.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel] = readFile(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
