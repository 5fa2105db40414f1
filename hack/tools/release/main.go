/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command release publishes a Teardown release (make release,
// docs/install-image.md#releasing) and checks one as its users do:
//
//	release check   -registry R -version V -key K    what make release needs, before it builds
//	release push    -registry R -version V -key K -image DIR -chart TGZ -out DIR
//	                pushes make image's index by digest, tagged V, with its SBOM
//	                referrers; helm pushes the chart to oci://R/charts; signs the
//	                index, the SBOMs and the chart as cosign does; writes
//	                DIR/release.json and DIR/cosign.pub
//	release plugins -version V -platforms P -out DIR [-url BASE]
//	                the plugin's archives, checksums.txt and the krew manifest
//	                DIR/teardown.yaml filled in from them (.krew.yaml)
//	release verify  -key cosign.pub REF...   as `cosign verify --key` offline
//	release keygen  -out PREFIX              a cosign-format key pair
//
// The signatures are key-based, with sigstore's Go libraries, in the layout
// cosign writes (REPO:sha256-<hex>.sig, simple-signing payloads), so
// `cosign verify --key cosign.pub --insecure-ignore-tlog` reads them; the
// public release adds keyless ones from its CI workflow
// (.github/workflows/release.yaml).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// usageError is a bad invocation: exit 2.
type usageError struct{ error }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release check|push|plugins|verify|keygen [flags] (see the package doc)")
		os.Exit(2)
	}
	err := run(context.Background(), os.Args[1], os.Args[2:])
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "release %s: %v\n", os.Args[1], err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "release %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// semver is the version a release takes: vMAJOR.MINOR.PATCH[-PRE][+BUILD],
// the tag, the image's tag and the chart's version alike.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// CheckVersion refuses what is not a release version.
func CheckVersion(v string) error {
	if v == "" {
		return usageError{errors.New("no -version (make release VERSION=vX.Y.Z)")}
	}
	if !semver.MatchString(v) {
		return usageError{fmt.Errorf("version %q is not vMAJOR.MINOR.PATCH[-PRERELEASE] (SemVer with a v, as the tag)", v)}
	}
	if strings.Contains(v, "+") {
		return usageError{fmt.Errorf("version %q: build metadata (+...) cannot be an image tag", v)}
	}
	return nil
}

// Repositories are where a release goes in registry R: R/teardown-controller
// and R/charts/teardown (helm push oci://R/charts).
func Repositories(registry string) (image, chart name.Repository, err error) {
	if registry == "" {
		return image, chart, usageError{errors.New("no -registry (make release REGISTRY=registry.example.com/teardown)")}
	}
	registry = strings.TrimSuffix(strings.TrimPrefix(registry, "oci://"), "/")
	if image, err = name.NewRepository(registry + "/teardown-controller"); err != nil {
		return image, chart, usageError{fmt.Errorf("registry %q: %w", registry, err)}
	}
	if chart, err = name.NewRepository(registry + "/charts/teardown"); err != nil {
		return image, chart, usageError{fmt.Errorf("registry %q: %w", registry, err)}
	}
	return image, chart, nil
}

func run(ctx context.Context, cmd string, args []string) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var (
		registry = fs.String("registry", "", "registry (and path) the release goes to: REGISTRY/teardown-controller, oci://REGISTRY/charts/teardown")
		version  = fs.String("version", "", "the release's version, vX.Y.Z[-PRE]")
		key      = fs.String("key", "", "signing key (check, push: cosign.key, password in COSIGN_PASSWORD) or public key (verify: cosign.pub)")
		image    = fs.String("image", "bin/image/teardown-controller", "push: make image's OCI layout")
		chart    = fs.String("chart", "", "push: the chart package (make release-manifests)")
		helm     = fs.String("helm", "helm", "push: the helm binary")
		out      = fs.String("out", "bin/release", "push, plugins: the release folder; keygen: the key pair's path prefix")
		repo     = fs.String("repo", ".", "plugins: the main module's root")
		plats    = fs.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64", "plugins: os/arch list")
		krew     = fs.String("krew", ".krew.yaml", "plugins: the krew manifest template")
		url      = fs.String("url", "", "plugins: where the archives are downloaded from (default: the template's release URLs)")
		commit   = fs.String("commit", "unknown", "plugins: the commit stamped into the plugin")
		date     = fs.String("date", "1970-01-01T00:00:00Z", "plugins: the date stamped into the plugin")
		also     = fs.String("also", "", "plugins: comma-separated files of -out listed in checksums.txt besides the archives")
	)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	switch cmd {
	case "check":
		if err := CheckVersion(*version); err != nil {
			return err
		}
		img, _, err := Repositories(*registry)
		if err != nil {
			return err
		}
		if *key == "" {
			return usageError{errors.New("no signing key: set SIGN_KEY=cosign.key (make release-key writes a pair; the password goes in COSIGN_PASSWORD)")}
		}
		if _, err := LoadSigner(*key); err != nil {
			return err
		}
		if err := Ping(ctx, img); err != nil {
			return err
		}
		fmt.Printf("release %s to %s: registry reachable, signing key loaded\n", *version, img.RegistryStr())
		return nil
	case "push":
		if err := CheckVersion(*version); err != nil {
			return err
		}
		return push(ctx, *registry, *version, *key, *image, *chart, *helm, *out)
	case "plugins":
		if err := CheckVersion(*version); err != nil {
			return err
		}
		ps, err := ParsePlatforms(*plats)
		if err != nil {
			return usageError{err}
		}
		var extra []string
		for _, a := range strings.Split(*also, ",") {
			if a = strings.TrimSpace(a); a != "" {
				extra = append(extra, a)
			}
		}
		return plugins(ctx, Build{Repo: *repo, Version: *version, Commit: *commit, Date: *date, Stderr: os.Stderr}, ps, *krew, *url, *out, extra)
	case "verify":
		if *key == "" || fs.NArg() == 0 {
			return usageError{errors.New("usage: release verify -key cosign.pub REF...")}
		}
		v, err := LoadVerifier(*key)
		if err != nil {
			return err
		}
		for _, a := range fs.Args() {
			ref, err := name.ParseReference(a)
			if err != nil {
				return usageError{err}
			}
			d, err := Verify(ctx, ref, v, RemoteOptions(ctx)...)
			if err != nil {
				return err
			}
			fmt.Printf("Verified %s: %s is signed by %s\n", a, d, *key)
		}
		return nil
	case "keygen":
		if err := GenerateKey(*out); err != nil {
			return err
		}
		fmt.Printf("wrote %s.key and %s.pub\n", *out, *out)
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q: check, push, plugins, verify or keygen", cmd)}
}

// Record is DIR/release.json: what a release pushed, by digest.
type Record struct {
	Version    string   `json:"version"`
	Image      string   `json:"image"`      // REPO@sha256:...
	SBOMs      []string `json:"sboms"`      // REPO@sha256:... referrers
	Chart      string   `json:"chart"`      // oci://REGISTRY/charts/teardown
	ChartRef   string   `json:"chartRef"`   // REGISTRY/charts/teardown@sha256:...
	Signatures []string `json:"signatures"` // the signature images' tags
	PublicKey  string   `json:"publicKey"`  // the file beside this one
}

func push(ctx context.Context, registry, version, key, layoutDir, chartPkg, helm, out string) error {
	imgRepo, chartRepo, err := Repositories(registry)
	if err != nil {
		return err
	}
	if chartPkg == "" {
		return usageError{errors.New("no -chart (make release-manifests packages it)")}
	}
	if key == "" {
		return usageError{errors.New("no signing key: set SIGN_KEY=cosign.key")}
	}
	s, err := LoadSigner(key)
	if err != nil {
		return err
	}
	if err := Ping(ctx, imgRepo); err != nil {
		return err
	}
	rec := Record{Version: version, Chart: "oci://" + strings.TrimSuffix(chartRepo.Name(), "/teardown"), PublicKey: "cosign.pub"}
	pushed, err := PushImage(ctx, layoutDir, imgRepo, version)
	if err != nil {
		return err
	}
	rec.Image = imgRepo.Digest(pushed.Index.String()).String()
	fmt.Printf("pushed %s (tag %s)\n", rec.Image, version)
	signed := []name.Digest{imgRepo.Digest(pushed.Index.String())}
	for _, h := range pushed.SBOMs {
		rec.SBOMs = append(rec.SBOMs, imgRepo.Digest(h.String()).String())
		signed = append(signed, imgRepo.Digest(h.String()))
	}

	helmArgs := []string{"push", chartPkg, rec.Chart}
	if chartRepo.Registry.Scheme() == "http" {
		// A registry on localhost speaks plain HTTP (go-containerregistry's
		// rule); helm pushes over it only when told.
		helmArgs = append(helmArgs, "--plain-http")
	}
	b, err := exec.CommandContext(ctx, helm, helmArgs...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm %s: %w\n%s", strings.Join(helmArgs, " "), err, b)
	}
	m := regexp.MustCompile(`(?m)^Digest: (sha256:[0-9a-f]{64})$`).FindSubmatch(b)
	if m == nil {
		return fmt.Errorf("helm push printed no digest:\n%s", b)
	}
	chartDigest := chartRepo.Digest(string(m[1]))
	rec.ChartRef = chartDigest.String()
	fmt.Printf("pushed %s (version %s)\n", rec.ChartRef, version)
	signed = append(signed, chartDigest)

	for _, d := range signed {
		tag, err := Sign(ctx, d, s, RemoteOptions(ctx)...)
		if err != nil {
			return err
		}
		rec.Signatures = append(rec.Signatures, tag.String())
		fmt.Printf("signed %s (%s)\n", d, tag)
	}
	pub, err := s.PublicKey()
	if err != nil {
		return err
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, rec.PublicKey), pem, 0o644); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "release.json"), append(data, '\n'), 0o644)
}

func plugins(ctx context.Context, b Build, ps []Platform, krewTemplate, url, out string, extra []string) error {
	tmpl, err := os.ReadFile(krewTemplate)
	if err != nil {
		return fmt.Errorf("krew template: %w", err)
	}
	bins, err := os.MkdirTemp("", "teardown-plugin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bins)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	names := append([]string(nil), extra...)
	for _, p := range ps {
		bin, err := BuildPlugin(ctx, b, p, bins)
		if err != nil {
			return err
		}
		files, err := PluginFiles(b.Repo, bin, p)
		if err != nil {
			return err
		}
		archive := ArchiveName(b.Version, p)
		if err := WriteArchive(filepath.Join(out, archive), files); err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		names = append(names, archive)
		fmt.Printf("wrote %s\n", filepath.Join(out, archive))
	}
	if err := WriteChecksums(out, names); err != nil {
		return err
	}
	_, manifest, err := RenderKrew(tmpl, b.Version, out, url)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "teardown.yaml"), manifest, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", filepath.Join(out, ChecksumsFile), filepath.Join(out, "teardown.yaml"))
	return nil
}
