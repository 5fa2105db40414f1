/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry serves an in-memory registry (referrers API on or off) and
// returns its host.
func testRegistry(t *testing.T, referrers bool) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(referrers)))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func keyPair(t *testing.T, password string) (priv, pub string) {
	t.Helper()
	t.Setenv(PasswordEnv, password)
	prefix := filepath.Join(t.TempDir(), "cosign")
	if err := GenerateKey(prefix); err != nil {
		t.Fatal(err)
	}
	return prefix + ".key", prefix + ".pub"
}

// TestSignVerifyRoundTrip: a signature Sign pushes is one Verify accepts
// with the public key, by digest and by tag, in cosign's layout; another
// key's, a tampered payload's and an unsigned artifact's are refused.
func TestSignVerifyRoundTrip(t *testing.T) {
	ctx := context.Background()
	host := testRegistry(t, false)
	priv, pub := keyPair(t, "s3cret")
	s, err := LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(host + "/teardown-controller")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := random.Index(64, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(repo.Tag("v1.2.3"), idx); err != nil {
		t.Fatal(err)
	}
	h, _ := idx.Digest()
	d := repo.Digest(h.String())
	tag, err := Sign(ctx, d, s)
	if err != nil {
		t.Fatal(err)
	}
	if want := "sha256-" + h.Hex + ".sig"; tag.TagStr() != want {
		t.Errorf("signature tag %s, want %s (cosign's)", tag.TagStr(), want)
	}
	for _, ref := range []name.Reference{d, repo.Tag("v1.2.3")} {
		got, err := Verify(ctx, ref, v)
		if err != nil {
			t.Fatalf("Verify(%s): %v", ref, err)
		}
		if got.DigestStr() != h.String() {
			t.Errorf("Verify(%s) = %s, want %s", ref, got, h)
		}
	}

	// The layout cosign reads: one simple-signing layer, its payload naming
	// the digest and the repository, the signature in the annotation.
	sigImg, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := sigImg.Manifest()
	if m.MediaType != types.OCIManifestSchema1 || len(m.Layers) != 1 || m.Layers[0].MediaType != SimpleSigningMediaType || m.Layers[0].Annotations[SignatureAnnotation] == "" {
		t.Fatalf("signature manifest is not cosign's layout: %+v", m)
	}
	l, _ := sigImg.LayerByDigest(m.Layers[0].Digest)
	rc, _ := l.Uncompressed()
	body, _ := io.ReadAll(rc)
	var p struct {
		Critical struct {
			Identity struct {
				DockerReference string `json:"docker-reference"`
			} `json:"identity"`
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
			Type string `json:"type"`
		} `json:"critical"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Critical.Type != "cosign container image signature" || p.Critical.Image.Digest != h.String() || p.Critical.Identity.DockerReference != repo.Name() {
		t.Errorf("payload %s", body)
	}

	// A second signature is added beside the first, as cosign does.
	priv2, pub2 := keyPair(t, "")
	s2, err := LoadSigner(priv2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Sign(ctx, d, s2); err != nil {
		t.Fatal(err)
	}
	v2, _ := LoadVerifier(pub2)
	if _, err := Verify(ctx, d, v); err != nil {
		t.Errorf("the first key's signature is gone after a second signing: %v", err)
	}
	if _, err := Verify(ctx, d, v2); err != nil {
		t.Errorf("the second key's signature: %v", err)
	}

	// Another key: refused.
	_, pub3 := keyPair(t, "")
	v3, _ := LoadVerifier(pub3)
	if _, err := Verify(ctx, d, v3); err == nil || !strings.Contains(err.Error(), "no valid signature") {
		t.Errorf("a key that signed nothing: %v", err)
	}

	// Unsigned: refused.
	other, _ := random.Index(64, 1, 1)
	if err := remote.WriteIndex(repo.Tag("unsigned"), other); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, repo.Tag("unsigned"), v); err == nil || !strings.Contains(err.Error(), "has no signature") {
		t.Errorf("unsigned: %v", err)
	}

	// A valid signature moved onto another digest's tag: its payload names
	// the first digest, so it is refused.
	oh, _ := other.Digest()
	otherTag, _ := SignatureTag(repo.Digest(oh.String()))
	if err := remote.Write(otherTag, sigImg); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, repo.Tag("unsigned"), v); err == nil || !strings.Contains(err.Error(), "signs "+h.String()) {
		t.Errorf("a signature of another digest: %v", err)
	}

	// A tampered payload under a valid signature: refused.
	forged := strings.Replace(string(body), h.String(), oh.String(), 1)
	fimg, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer([]byte(forged), SimpleSigningMediaType),
		Annotations: map[string]string{SignatureAnnotation: m.Layers[0].Annotations[SignatureAnnotation]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(otherTag, fimg); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, repo.Tag("unsigned"), v); err == nil || !strings.Contains(err.Error(), "invalid signature") {
		t.Errorf("a forged payload: %v", err)
	}
	if _, err := base64.StdEncoding.DecodeString(m.Layers[0].Annotations[SignatureAnnotation]); err != nil {
		t.Errorf("the signature annotation is not base64: %v", err)
	}
}

// TestLoadSignerErrors: a wrong password and a missing file say so.
func TestLoadSignerErrors(t *testing.T) {
	priv, _ := keyPair(t, "right")
	t.Setenv(PasswordEnv, "wrong")
	if _, err := LoadSigner(priv); err == nil || !strings.Contains(err.Error(), PasswordEnv) {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := LoadSigner(filepath.Join(t.TempDir(), "none.key")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing key: %v", err)
	}
}

// TestPushImage: the layout's index goes by digest (and the version's
// tag), its SBOMs as referrers of their platform's manifest, found through
// the referrers API and through the tag fallback alike.
func TestPushImage(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "tag fallback"}[referrers], func(t *testing.T) {
			ctx := context.Background()
			host := testRegistry(t, referrers)
			dir := filepath.Join(t.TempDir(), "layout")
			idx, err := random.Index(64, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			lp, err := layout.Write(dir, empty.Index)
			if err != nil {
				t.Fatal(err)
			}
			if err := lp.AppendIndex(idx); err != nil {
				t.Fatal(err)
			}
			im, _ := idx.IndexManifest()
			subject := im.Manifests[0]
			sbom, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{Layer: static.NewLayer([]byte(`{"spdxVersion":"SPDX-2.3"}`), SPDXMediaType)})
			if err != nil {
				t.Fatal(err)
			}
			sbom = mutate.Subject(sbom, v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}).(v1.Image)
			sh, _ := sbom.Digest()
			raw, _ := sbom.RawManifest()
			if err := lp.WriteImage(sbom); err != nil {
				t.Fatal(err)
			}
			if err := lp.AppendDescriptor(v1.Descriptor{MediaType: types.OCIManifestSchema1, ArtifactType: SPDXMediaType, Digest: sh, Size: int64(len(raw))}); err != nil {
				t.Fatal(err)
			}

			repo, _ := name.NewRepository(host + "/teardown-controller")
			pushed, err := PushImage(ctx, dir, repo, "v1.2.3")
			if err != nil {
				t.Fatal(err)
			}
			ih, _ := idx.Digest()
			if pushed.Index != ih || len(pushed.SBOMs) != 1 || pushed.SBOMs[0] != sh {
				t.Fatalf("pushed %+v, want index %s and SBOM %s", pushed, ih, sh)
			}
			desc, err := remote.Head(repo.Tag("v1.2.3"))
			if err != nil || desc.Digest != ih {
				t.Fatalf("tag v1.2.3: %v %v", desc, err)
			}
			refs, err := remote.Referrers(repo.Digest(subject.Digest.String()))
			if err != nil {
				t.Fatal(err)
			}
			rm, _ := refs.IndexManifest()
			if len(rm.Manifests) != 1 || rm.Manifests[0].Digest != sh {
				t.Fatalf("referrers of %s: %+v, want the SBOM %s", subject.Digest, rm.Manifests, sh)
			}
		})
	}
}

// TestPingUnreachable: a registry nobody serves is a clear error.
func TestPingUnreachable(t *testing.T) {
	srv := httptest.NewServer(nil)
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	repo, _ := name.NewRepository(host + "/teardown-controller")
	if err := Ping(context.Background(), repo); err == nil || !strings.Contains(err.Error(), "registry "+host+" is unreachable") {
		t.Errorf("Ping of a closed port: %v", err)
	}
}

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.1.0": true, "v1.12.3-rc.1": true, "v0.0.0-e2e": true,
		"": false, "0.1.0": false, "v1.2": false, "v1.2.3+build": false, "v01.2.3": false, "latest": false,
	} {
		err := CheckVersion(v)
		if (err == nil) != ok {
			t.Errorf("CheckVersion(%q) = %v, want ok %v", v, err, ok)
		}
		var ue usageError
		if err != nil && !errors.As(err, &ue) {
			t.Errorf("CheckVersion(%q): not a usage error: %v", v, err)
		}
	}
}

// repoRoot is the main module's root, three folders up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestKrewManifest: .krew.yaml filled in from the archives: every platform
// it names gets its archive's URL and sha256, in the tool's archive names;
// a platform without an archive is left out; -url moves the URLs.
func TestKrewManifest(t *testing.T) {
	root := repoRoot(t)
	tmpl, err := os.ReadFile(filepath.Join(root, ".krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	all := []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}}
	sums := map[string]string{}
	for _, p := range all {
		bin := filepath.Join(dir, "bin", PluginName)
		if p.OS == "windows" {
			bin += ".exe"
		}
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, []byte("binary for "+p.String()), 0o755); err != nil {
			t.Fatal(err)
		}
		files, err := PluginFiles(root, bin, p)
		if err != nil {
			t.Fatal(err)
		}
		a := ArchiveName("v1.2.3", p)
		if err := WriteArchive(filepath.Join(dir, a), files); err != nil {
			t.Fatal(err)
		}
		sums[p.String()], _ = FileSHA256(filepath.Join(dir, a))
	}
	plugin, out, err := RenderKrew(tmpl, "v1.2.3", dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if plugin.Spec.Version != "v1.2.3" || plugin.Metadata.Name != "teardown" || plugin.Kind != "Plugin" {
		t.Errorf("manifest header: %+v", plugin)
	}
	if n := len(plugin.Spec.ShortDescription); n > 50 {
		t.Errorf("shortDescription is %d characters; krew-index asks 50 at most", n)
	}
	if len(plugin.Spec.Platforms) != len(all) {
		t.Fatalf("%d platforms, want %d:\n%s", len(plugin.Spec.Platforms), len(all), out)
	}
	for _, pl := range plugin.Spec.Platforms {
		p := Platform{pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]}
		want := "https://github.com/teardown-dev/teardown/releases/download/v1.2.3/" + ArchiveName("v1.2.3", p)
		if pl.URI != want {
			t.Errorf("%s: uri %s, want %s", p, pl.URI, want)
		}
		if pl.SHA256 != sums[p.String()] || pl.SHA256 == "" {
			t.Errorf("%s: sha256 %s, want %s", p, pl.SHA256, sums[p.String()])
		}
		// The archive holds the binary bin names, at its root, and the LICENSE.
		names := archiveNames(t, filepath.Join(dir, ArchiveName("v1.2.3", p)))
		if !names[pl.Bin] || !names["LICENSE"] {
			t.Errorf("%s: the archive holds %v; krew runs %s and wants the LICENSE", p, names, pl.Bin)
		}
	}

	// Only the host's archive, served elsewhere (make e2e).
	for _, p := range all[1:] {
		if err := os.Remove(filepath.Join(dir, ArchiveName("v1.2.3", p))); err != nil {
			t.Fatal(err)
		}
	}
	plugin, _, err = RenderKrew(tmpl, "v1.2.3", dir, "http://127.0.0.1:8080/r/")
	if err != nil {
		t.Fatal(err)
	}
	if len(plugin.Spec.Platforms) != 1 || plugin.Spec.Platforms[0].URI != "http://127.0.0.1:8080/r/"+ArchiveName("v1.2.3", all[0]) {
		t.Errorf("one archive: %+v", plugin.Spec.Platforms)
	}
	if _, _, err := RenderKrew(tmpl, "v1.2.3", t.TempDir(), ""); err == nil {
		t.Error("no archive at all should be an error")
	}
}

func archiveNames(t *testing.T, p string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(p, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			names[f.Name] = true
		}
		return names
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = true
	}
}

// TestChecksums: sha256sum's format, sorted, one line a file, and the
// archives are reproducible (same files, same bytes).
func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	files := []archiveFile{{name: "b", mode: 0o644, data: []byte("b")}, {name: "a", mode: 0o755, data: []byte("a")}}
	for _, n := range []string{"x.tar.gz", "y.tar.gz"} {
		if err := WriteArchive(filepath.Join(dir, n), files); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteChecksums(dir, []string{"y.tar.gz", "x.tar.gz"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  x.tar.gz") || !strings.HasSuffix(lines[1], "  y.tar.gz") {
		t.Fatalf("checksums.txt:\n%s", data)
	}
	x, _ := FileSHA256(filepath.Join(dir, "x.tar.gz"))
	y, _ := FileSHA256(filepath.Join(dir, "y.tar.gz"))
	if lines[0] != x+"  x.tar.gz" || x != y {
		t.Errorf("checksums.txt:\n%s\nx %s y %s (the same files should give the same archive)", data, x, y)
	}
}
