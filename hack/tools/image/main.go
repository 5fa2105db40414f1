/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command image builds the teardown-controller's multi-arch OCI image without
// a container engine (make image, docs/install-image.md): it cross-compiles
// the controller for each platform, puts the static binary on a minimal base
// made here from scratch (CA certificates, /etc/passwd and /etc/group with the
// nonroot user 65532, /tmp), and writes an OCI image index as an OCI image
// layout directory, with an SPDX 2.3 SBOM per platform attached as an OCI 1.1
// referrer.
//
// The result is reproducible: the same commit built by the same Go toolchain
// gives the same index digest on every machine. Every file in the layers has
// the Unix epoch as its time, tar entries are sorted, the image's created time
// is the commit's (-date), and the CA bundle comes from a pinned Go module, not
// from the machine.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	// The CA bundle of the image: the Mozilla NSS roots as the Go team
	// publishes them in golang.org/x/crypto/x509roots/fallback, pinned in this
	// module's go.mod, so every machine writes the same bytes. Updating that
	// pin (go get golang.org/x/crypto/x509roots/fallback@latest) updates the
	// image's roots.
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

const (
	// ModulePath is the main module the controller is built from.
	ModulePath = "github.com/teardown-dev/teardown"
	// BinaryPath is where the controller sits in the image.
	BinaryPath = "/teardown-controller"
	// CABundlePath is the CA bundle in the image, named by SSL_CERT_FILE.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// NonRoot is the uid and gid the controller runs as.
	NonRoot = 65532
	// SPDXMediaType is the SBOM's media type and its referrer's artifactType.
	SPDXMediaType = "application/spdx+json"
	// EmptyMediaType is the config of an OCI 1.1 artifact that has none.
	EmptyMediaType = "application/vnd.oci.empty.v1+json"
	projectURL     = "https://github.com/teardown-dev/teardown"
	refNameKey     = "org.opencontainers.image.ref.name"
)

// Options say what to build and where to write it.
type Options struct {
	// Repo is the root of the main module; Package is built from there.
	Repo    string
	Package string
	// Name is the binary's name and the image's title.
	Name      string
	Platforms []v1.Platform
	// Version, Commit and Date are set in the binary with -ldflags and in the
	// image's labels; Date (RFC 3339) is also the image's created time.
	Version, Commit, Date string
	// Out is the OCI image layout directory written; Tarball, if set, a tar
	// of that directory (an "oci-archive"); DigestFile, if set, receives the
	// index digest.
	Out, Tarball, DigestFile string
	// BinDir keeps the built binaries (BinDir/<os>-<arch>/<Name>); a
	// temporary directory when empty.
	BinDir string
	// Env is added to go build's environment (the tests give one build a
	// GOCACHE of its own).
	Env []string
	// Stderr receives the go build output.
	Stderr io.Writer
}

// Result is what Build wrote.
type Result struct {
	Index     v1.Hash
	Platforms map[string]v1.Hash // "linux/amd64" -> image manifest digest
	SBOMs     map[string]v1.Hash // "linux/amd64" -> SBOM referrer manifest digest
}

func main() {
	o := Options{Stderr: os.Stderr}
	var platforms string
	flag.StringVar(&o.Repo, "repo", ".", "root of the main module")
	flag.StringVar(&o.Package, "package", "./cmd/teardown-controller", "package to build, relative to -repo")
	flag.StringVar(&o.Name, "name", "teardown-controller", "binary name and image title")
	flag.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	flag.StringVar(&o.Version, "version", "v0.0.0-dev", "version set in the binary and the labels")
	flag.StringVar(&o.Commit, "commit", "unknown", "commit set in the binary and the labels")
	flag.StringVar(&o.Date, "date", "1970-01-01T00:00:00Z", "build date (RFC 3339; use the commit's time for reproducible builds)")
	flag.StringVar(&o.Out, "out", "bin/image/teardown-controller", "OCI image layout directory to write (replaced)")
	flag.StringVar(&o.Tarball, "tarball", "", "also write the layout as this tar file (oci-archive)")
	flag.StringVar(&o.DigestFile, "digest-file", "", "write the index digest to this file")
	flag.StringVar(&o.BinDir, "bin-dir", "", "keep the built binaries here (default: a temporary directory)")
	flag.Parse()
	var err error
	if o.Platforms, err = ParsePlatforms(platforms); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(2)
	}
	start := time.Now()
	res, err := Build(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: OCI image index %s (%s, %s)\n", o.Out, res.Index, o.Version, time.Since(start).Round(time.Millisecond))
	for _, p := range o.Platforms {
		fmt.Printf("  %-12s %s  sbom %s\n", p.String(), res.Platforms[p.String()], res.SBOMs[p.String()])
	}
}

// ParsePlatforms reads "linux/amd64,linux/arm64".
func ParsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := v1.ParsePlatform(f)
		if err != nil {
			return nil, err
		}
		if p.OS == "" || p.Architecture == "" || p.Variant != "" {
			return nil, fmt.Errorf("platform %q: want os/arch", f)
		}
		out = append(out, *p)
	}
	if len(out) == 0 {
		return nil, errors.New("no platform")
	}
	return out, nil
}

// Build compiles the binaries and writes the image layout.
func Build(ctx context.Context, o Options) (*Result, error) {
	created, err := time.Parse(time.RFC3339, o.Date)
	if err != nil {
		return nil, fmt.Errorf("-date: %w", err)
	}
	created = created.UTC()
	o.Date = created.Format(time.RFC3339)
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.BinDir == "" {
		dir, err := os.MkdirTemp("", "teardown-image-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.BinDir = dir
	}
	base, err := BaseLayer()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       o.Name,
		"org.opencontainers.image.description": "Teardown controller: safe, ordered, explainable deletion for Kubernetes",
		"org.opencontainers.image.source":      projectURL,
		"org.opencontainers.image.url":         projectURL,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Commit,
		"org.opencontainers.image.created":     o.Date,
	}

	res := &Result{Platforms: map[string]v1.Hash{}, SBOMs: map[string]v1.Hash{}}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	type sbomFor struct {
		platform string
		subject  v1.Descriptor
		doc      []byte
	}
	var sboms []sbomFor
	for _, p := range o.Platforms {
		bin, err := compile(ctx, o, p)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		img, err := platformImage(p, base, data, created, labels)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.String(), err)
		}
		desc, err := descriptor(img)
		if err != nil {
			return nil, err
		}
		plat := p
		desc.Platform = &plat
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: described{img, *desc}})
		res.Platforms[p.String()] = desc.Digest

		doc, err := SBOM(bin, data, p, o)
		if err != nil {
			return nil, fmt.Errorf("%s: sbom: %w", p.String(), err)
		}
		sboms = append(sboms, sbomFor{platform: p.String(), subject: *desc, doc: doc})
	}
	indexAnnotations := map[string]string{}
	for _, k := range []string{"title", "description", "source", "url", "licenses", "version", "revision", "created"} {
		indexAnnotations["org.opencontainers.image."+k] = labels["org.opencontainers.image."+k]
	}
	idx = mutate.Annotations(idx, indexAnnotations).(v1.ImageIndex)
	if res.Index, err = idx.Digest(); err != nil {
		return nil, err
	}

	// Written beside Out and renamed over it, so a failed build never leaves
	// half a layout (layout.Write appends to an existing index.json).
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return nil, err
	}
	tmp := o.Out + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	lp, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return nil, err
	}
	// The ref.name annotation is the tag: skopeo copy oci:DIR:VERSION.
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameKey: o.Version})); err != nil {
		return nil, err
	}
	for _, s := range sboms {
		h, err := appendSBOM(lp, s.subject, s.doc, o.Name, s.platform, o.Date)
		if err != nil {
			return nil, fmt.Errorf("%s: sbom: %w", s.platform, err)
		}
		res.SBOMs[s.platform] = h
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, o.Out); err != nil {
		return nil, err
	}
	if o.Tarball != "" {
		if err := tarDir(o.Out, o.Tarball); err != nil {
			return nil, fmt.Errorf("tarball: %w", err)
		}
	}
	if o.DigestFile != "" {
		if err := os.WriteFile(o.DigestFile, []byte(res.Index.String()+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// compile cross-compiles the package for p into BinDir/<os>-<arch>/<Name>.
// Everything that could make two machines' builds differ is set here rather
// than taken from the environment: no cgo, -trimpath, no VCS stamp (the
// version comes in through -ldflags), and the baseline microarchitecture.
func compile(ctx context.Context, o Options, p v1.Platform) (string, error) {
	out, err := filepath.Abs(filepath.Join(o.BinDir, p.OS+"-"+p.Architecture, o.Name))
	if err != nil {
		return "", err
	}
	const v = ModulePath + "/internal/version."
	ldflags := fmt.Sprintf("-s -w -X %sVersion=%s -X %sCommit=%s -X %sDate=%s", v, o.Version, v, o.Commit, v, o.Date)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, o.Package)
	cmd.Dir = o.Repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "GOWORK=off")
	cmd.Env = append(cmd.Env, o.Env...)
	cmd.Stdout, cmd.Stderr = o.Stderr, o.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s for %s: %w", o.Package, p.String(), err)
	}
	return out, nil
}

// entry is one file or directory of a layer.
type entry struct {
	name string // without the leading slash
	mode int64
	uid  int
	data []byte // nil for a directory
}

// BaseLayer is the minimal base the controller runs on, the same for every
// platform (so registries store it once).
func BaseLayer() (v1.Layer, error) {
	certs, err := CABundle()
	if err != nil {
		return nil, err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)
	group := fmt.Sprintf("root:x:0:\nnobody:x:65534:\nnonroot:x:%d:\n", NonRoot)
	return layer([]entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: strings.TrimPrefix(CABundlePath, "/"), mode: 0o644, data: certs},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: NonRoot},
		{name: "root/", mode: 0o700},
		{name: "tmp/", mode: 0o1777},
	})
}

// CABundle is the PEM bundle of the NSS roots in the pinned fallback module.
// Roots the NSS store only trusts for certificates issued before a date are
// left out: a PEM file cannot carry that constraint, and including them would
// trust what NSS distrusts.
func CABundle() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("# Mozilla NSS root certificates, from the Go module\n# golang.org/x/crypto/x509roots/fallback pinned in hack/tools/image/go.mod.\n")
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("no CA certificate in golang.org/x/crypto/x509roots/fallback/bundle")
	}
	return buf.Bytes(), nil
}

// layer makes a reproducible gzip tar layer of entries: sorted names, the
// Unix epoch as every time, numeric owners only.
func layer(entries []entry) (v1.Layer, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: time.Unix(0, 0),
			Format:  tar.FormatPAX,
		}
		if e.data == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(9))
}

// platformImage is base plus the binary, with the controller's config.
func platformImage(p v1.Platform, base v1.Layer, binary []byte, created time.Time, labels map[string]string) (v1.Image, error) {
	app, err := layer([]entry{{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, data: binary}})
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{BinaryPath},
			User:       fmt.Sprintf("%d:%d", NonRoot, NonRoot),
			WorkingDir: "/",
			Env:        []string{"SSL_CERT_FILE=" + CABundlePath},
			Labels:     labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: time.Unix(0, 0).UTC()}, CreatedBy: "hack/tools/image: CA certificates, /etc/passwd, /etc/group, /tmp", Comment: "base"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "hack/tools/image: go build " + BinaryPath}},
	)
}

// described is an image whose descriptor in the index is exactly desc:
// without it go-containerregistry gives an image's descriptor an
// artifactType (its config's media type), which image indexes do not carry.
type described struct {
	v1.Image
	desc v1.Descriptor
}

func (d described) Descriptor() (*v1.Descriptor, error) { return &d.desc, nil }

func descriptor(img v1.Image) (*v1.Descriptor, error) {
	raw, err := img.RawManifest()
	if err != nil {
		return nil, err
	}
	h, n, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return &v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: h, Size: n}, nil
}

// appendSBOM writes the SBOM as an OCI 1.1 artifact whose subject is the
// platform's image manifest, and lists it in the layout's index.json, where
// the image layout spec has referrers found (OCI image-layout; oras cp -r
// copies them along).
func appendSBOM(lp layout.Path, subject v1.Descriptor, doc []byte, name, platform, created string) (v1.Hash, error) {
	emptyConfig := []byte("{}")
	blob := func(data []byte) (v1.Hash, int64, error) {
		h, n, err := v1.SHA256(bytes.NewReader(data))
		if err != nil {
			return h, n, err
		}
		return h, n, lp.WriteBlob(h, io.NopCloser(bytes.NewReader(data)))
	}
	ch, cn, err := blob(emptyConfig)
	if err != nil {
		return v1.Hash{}, err
	}
	dh, dn, err := blob(doc)
	if err != nil {
		return v1.Hash{}, err
	}
	subject.Platform = nil
	subject.Annotations = nil
	title := name + "-" + strings.ReplaceAll(platform, "/", "-") + ".spdx.json"
	annotations := map[string]string{"org.opencontainers.image.created": created}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  SPDXMediaType,
		Config:        v1.Descriptor{MediaType: EmptyMediaType, Digest: ch, Size: cn, Data: emptyConfig},
		Layers: []v1.Descriptor{{MediaType: SPDXMediaType, Digest: dh, Size: dn,
			Annotations: map[string]string{"org.opencontainers.image.title": title}}},
		Subject:     &subject,
		Annotations: annotations,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return v1.Hash{}, err
	}
	mh, mn, err := blob(raw)
	if err != nil {
		return v1.Hash{}, err
	}
	return mh, lp.AppendDescriptor(v1.Descriptor{
		MediaType:    types.OCIManifestSchema1,
		ArtifactType: SPDXMediaType,
		Digest:       mh,
		Size:         mn,
		Annotations:  annotations,
	})
}

// SPDX 2.3 JSON, the subset written here.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Files             []spdxFile         `json:"files"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name                  string            `json:"name"`
	SPDXID                string            `json:"SPDXID"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	Supplier              string            `json:"supplier,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	LicenseConcluded      string            `json:"licenseConcluded"`
	LicenseDeclared       string            `json:"licenseDeclared"`
	CopyrightText         string            `json:"copyrightText"`
	Comment               string            `json:"comment,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
}

type spdxFile struct {
	FileName         string         `json:"fileName"`
	SPDXID           string         `json:"SPDXID"`
	FileTypes        []string       `json:"fileTypes"`
	Checksums        []spdxChecksum `json:"checksums"`
	LicenseConcluded string         `json:"licenseConcluded"`
	CopyrightText    string         `json:"copyrightText"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

var spdxIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(kind, name, version string) string {
	return "SPDXRef-" + kind + "-" + strings.Trim(spdxIDUnsafe.ReplaceAllString(name+"-"+version, "-"), "-")
}

// goSumChecksum turns a go.sum hash ("h1:" base64 SHA-256 of the module's
// dirhash) into an SPDX SHA256 checksum, as syft records Go modules.
func goSumChecksum(sum string) []spdxChecksum {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != sha256.Size {
		return nil
	}
	return []spdxChecksum{{Algorithm: "SHA256", Value: hex.EncodeToString(raw)}}
}

// SBOM describes the binary at path (its bytes in data) from the build
// information the Go toolchain embedded: the main module, every module linked
// in with its go.sum hash, and the Go standard library.
func SBOM(path string, data []byte, p v1.Platform, o Options) ([]byte, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s1, s256 := sha1.Sum(data), sha256.Sum256(data)
	platform := p.OS + "-" + p.Architecture
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              o.Name + "-" + o.Version + "-" + platform,
		DocumentNamespace: projectURL + "/spdx/" + o.Name + "/" + o.Version + "/" + platform + "/" + hex.EncodeToString(s256[:]),
		CreationInfo: spdxCreationInfo{
			Created:  o.Date,
			Creators: []string{"Organization: The Teardown Authors", "Tool: teardown-hack-tools-image"},
		},
	}
	var settings []string
	for _, s := range bi.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	mainID := spdxID("Package-go-module", bi.Main.Path, o.Version)
	doc.Packages = append(doc.Packages, spdxPackage{
		Name:                  bi.Main.Path,
		SPDXID:                mainID,
		VersionInfo:           o.Version,
		Supplier:              "Organization: The Teardown Authors",
		DownloadLocation:      "git+" + projectURL + ".git@" + o.Commit,
		LicenseConcluded:      "NOASSERTION",
		LicenseDeclared:       "Apache-2.0",
		CopyrightText:         "NOASSERTION",
		Comment:               "built as " + bi.Path + " with " + bi.GoVersion + ": " + strings.Join(settings, " "),
		ExternalRefs:          []spdxExternalRef{purl(bi.Main.Path, o.Version)},
		PrimaryPackagePurpose: "APPLICATION",
	})
	fileID := "SPDXRef-File-" + strings.Trim(spdxIDUnsafe.ReplaceAllString(BinaryPath, "-"), "-")
	doc.Files = []spdxFile{{
		FileName:         BinaryPath,
		SPDXID:           fileID,
		FileTypes:        []string{"BINARY", "APPLICATION"},
		Checksums:        []spdxChecksum{{"SHA1", hex.EncodeToString(s1[:])}, {"SHA256", hex.EncodeToString(s256[:])}},
		LicenseConcluded: "NOASSERTION",
		CopyrightText:    "NOASSERTION",
	}}
	doc.Relationships = []spdxRelationship{
		{"SPDXRef-DOCUMENT", "DESCRIBES", mainID},
		{fileID, "GENERATED_FROM", mainID},
	}
	stdID := spdxID("Package-go-stdlib", "stdlib", bi.GoVersion)
	doc.Packages = append(doc.Packages, spdxPackage{
		Name:             "stdlib",
		SPDXID:           stdID,
		VersionInfo:      bi.GoVersion,
		DownloadLocation: "https://go.dev/dl/",
		LicenseConcluded: "NOASSERTION",
		LicenseDeclared:  "BSD-3-Clause",
		CopyrightText:    "NOASSERTION",
		ExternalRefs:     []spdxExternalRef{purl("stdlib", bi.GoVersion)},
	})
	doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", stdID})
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		id := spdxID("Package-go-module", d.Path, d.Version)
		doc.Packages = append(doc.Packages, spdxPackage{
			Name:             d.Path,
			SPDXID:           id,
			VersionInfo:      d.Version,
			DownloadLocation: "https://proxy.golang.org/" + d.Path + "/@v/" + d.Version + ".zip",
			Checksums:        goSumChecksum(d.Sum),
			LicenseConcluded: "NOASSERTION",
			LicenseDeclared:  "NOASSERTION",
			CopyrightText:    "NOASSERTION",
			ExternalRefs:     []spdxExternalRef{purl(d.Path, d.Version)},
		})
		doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", id})
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func purl(path, version string) spdxExternalRef {
	return spdxExternalRef{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:golang/" + path + "@" + version}
}

// tarDir writes dir as a reproducible tar: sorted, epoch times, fixed modes.
func tarDir(dir, out string) error {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		names = append(names, path)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.CreateTemp(filepath.Dir(out), ".image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	tw := tar.NewWriter(f)
	for _, path := range names {
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: time.Unix(0, 0), Mode: 0o644, Typeflag: tar.TypeReg, Size: fi.Size(), Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Name += "/"
			h.Mode, h.Typeflag, h.Size = 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.IsDir() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), out)
}
