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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	// ModulePath is the main module the plugin is built from.
	ModulePath = "github.com/teardown-dev/teardown"
	// PluginName is the plugin's binary (kubectl finds kubectl-teardown).
	PluginName = "kubectl-teardown"
	// CompletionScript is kubectl's completion hook for the plugin.
	CompletionScript = "kubectl_complete-teardown"
	// ChecksumsFile lists every archive's sha256, as sha256sum -c reads it.
	ChecksumsFile = "checksums.txt"
)

// Platform is an os/arch the plugin is built for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatforms reads "linux/amd64,darwin/arm64".
func ParsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		o, a, ok := strings.Cut(f, "/")
		if !ok || o == "" || a == "" || strings.Contains(a, "/") {
			return nil, fmt.Errorf("platform %q: want os/arch", f)
		}
		out = append(out, Platform{o, a})
	}
	if len(out) == 0 {
		return nil, errors.New("no platform")
	}
	return out, nil
}

// ArchiveName is the plugin's archive for p, the name .krew.yaml's URLs
// end with: a zip on Windows (krew and Windows users expect one), else a
// gzipped tar.
func ArchiveName(version string, p Platform) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_%s_%s_%s%s", PluginName, version, p.OS, p.Arch, ext)
}

// Build says how to build: the main module's root, and what is stamped into
// the binary.
type Build struct {
	Repo                  string
	Version, Commit, Date string
	Stderr                io.Writer
}

// BuildPlugin cross-compiles the plugin for p into dir, with the flags make
// image builds the controller with (static, -trimpath, baseline
// microarchitecture), so the two share the build cache on linux.
func BuildPlugin(ctx context.Context, b Build, p Platform, dir string) (string, error) {
	bin := PluginName
	if p.OS == "windows" {
		bin += ".exe"
	}
	out, err := filepath.Abs(filepath.Join(dir, p.OS+"-"+p.Arch, bin))
	if err != nil {
		return "", err
	}
	const v = ModulePath + "/internal/version."
	ldflags := fmt.Sprintf("-s -w -X %sVersion=%s -X %sCommit=%s -X %sDate=%s", v, b.Version, v, b.Commit, v, b.Date)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/kubectl-teardown")
	cmd.Dir = b.Repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch,
		"GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "GOWORK=off")
	cmd.Stdout, cmd.Stderr = b.Stderr, b.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kubectl-teardown for %s: %w", p, err)
	}
	return out, nil
}

// archiveFile is one file of an archive, at its root.
type archiveFile struct {
	name string
	mode int64
	data []byte
}

// PluginFiles are what a plugin archive holds: the binary (the path krew's
// bin names), the LICENSE krew asks for, and, but on Windows, the
// completion script (krew installs only the binary on PATH, kubernetes-sigs/krew#812:
// docs/cli.md says where to put it).
func PluginFiles(repo, binary string, p Platform) ([]archiveFile, error) {
	read := func(name, src string, mode int64) (archiveFile, error) {
		data, err := os.ReadFile(src)
		return archiveFile{name: name, mode: mode, data: data}, err
	}
	var files []archiveFile
	for _, f := range []struct {
		name, src string
		mode      int64
	}{
		{filepath.Base(binary), binary, 0o755},
		{"LICENSE", filepath.Join(repo, "LICENSE"), 0o644},
		{CompletionScript, filepath.Join(repo, "cmd/kubectl-teardown", CompletionScript), 0o755},
	} {
		if f.name == CompletionScript && p.OS == "windows" {
			continue
		}
		af, err := read(f.name, f.src, f.mode)
		if err != nil {
			return nil, err
		}
		files = append(files, af)
	}
	return files, nil
}

// WriteArchive writes files as out, a zip or a gzipped tar by its name,
// reproducibly: sorted, the Unix epoch as every time, no owner.
func WriteArchive(out string, files []archiveFile) error {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	epoch := time.Unix(0, 0).UTC()
	switch {
	case strings.HasSuffix(out, ".zip"):
		zw := zip.NewWriter(&buf)
		for _, f := range files {
			h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: epoch}
			h.SetMode(os.FileMode(f.mode))
			w, err := zw.CreateHeader(h)
			if err != nil {
				return err
			}
			if _, err := w.Write(f.data); err != nil {
				return err
			}
		}
		if err := zw.Close(); err != nil {
			return err
		}
	case strings.HasSuffix(out, ".tar.gz"):
		gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return err
		}
		tw := tar.NewWriter(gz)
		for _, f := range files {
			h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(f.data); err != nil {
				return err
			}
		}
		if err := tw.Close(); err != nil {
			return err
		}
		if err := gz.Close(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: want .tar.gz or .zip", out)
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// FileSHA256 is the hex sha256 of a file.
func FileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteChecksums writes dir/checksums.txt for the named files of dir, in
// sha256sum's format ("<hex>  <name>"), sorted by name.
func WriteChecksums(dir string, names []string) error {
	names = append([]string(nil), names...)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		sum, err := FileSHA256(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(b.String()), 0o644)
}

// KrewPlugin is the krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2).
type KrewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage,omitempty"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description,omitempty"`
		Caveats          string         `json:"caveats,omitempty"`
		Platforms        []KrewPlatform `json:"platforms"`
	} `json:"spec"`
}

// KrewPlatform is one platform of a krew manifest.
type KrewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Bin    string `json:"bin"`
}

// RenderKrew fills the krew manifest template (.krew.yaml, in
// krew-release-bot's form: {{ .TagName }} and addURIAndSha URL TAG) from
// the archives in dir: each platform's uri, and the sha256 of the archive
// that uri names. With base set, the uri is base/ARCHIVE instead of the
// template's (where the archives are served before they are uploaded: make
// e2e). A platform whose archive dir lacks is left out (make e2e builds the
// archive of its own platform only); none at all is an error.
func RenderKrew(tmpl []byte, version, dir, base string) (*KrewPlugin, []byte, error) {
	const missing = "MISSING-ARCHIVE"
	addURIAndSha := func(url, tag string) (string, error) {
		var b strings.Builder
		t, err := template.New("url").Parse(url)
		if err != nil {
			return "", err
		}
		if err := t.Execute(&b, map[string]string{"TagName": tag}); err != nil {
			return "", err
		}
		url = b.String()
		archive := path.Base(url)
		sum, err := FileSHA256(filepath.Join(dir, archive))
		if errors.Is(err, os.ErrNotExist) {
			return "uri: " + missing + "\n    sha256: " + missing, nil
		} else if err != nil {
			return "", err
		}
		if base != "" {
			url = strings.TrimSuffix(base, "/") + "/" + archive
		}
		return fmt.Sprintf("uri: %s\n    sha256: %s", url, sum), nil
	}
	t, err := template.New(".krew.yaml").Funcs(template.FuncMap{"addURIAndSha": addURIAndSha}).Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, nil, fmt.Errorf("krew template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, map[string]string{"TagName": version}); err != nil {
		return nil, nil, fmt.Errorf("krew template: %w", err)
	}
	var p KrewPlugin
	if err := yaml.UnmarshalStrict(b.Bytes(), &p); err != nil {
		return nil, nil, fmt.Errorf("krew template: %w", err)
	}
	kept := p.Spec.Platforms[:0]
	for _, pl := range p.Spec.Platforms {
		if pl.URI != missing {
			kept = append(kept, pl)
		}
	}
	if len(kept) == 0 {
		return nil, nil, fmt.Errorf("no archive in %s matches a platform of the krew template", dir)
	}
	p.Spec.Platforms = kept
	out, err := yaml.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	return &p, out, nil
}
