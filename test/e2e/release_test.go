//go:build e2e

/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// releaseVersion is the release make e2e publishes to the cluster's
// registry and installs from.
const releaseVersion = "v0.0.0-e2e"

var (
	releaseDir string // make release's RELEASE_DIR: install.yaml, the chart, the archives, cosign.pub
	// releaseImage is the controller image the release pinned, by digest.
	releaseImage string
)

// publishRelease runs `make release` against the cluster's registry, as
// the release workflow runs it against the project's: the image for this
// machine's platform (make e2e's cluster runs it; make release builds both
// linux platforms), the plugin archive for this machine's platform, served
// over HTTP from where the krew manifest says, signed with a key made for
// the run. Then it installs the plugin as krew does, from the archive the
// manifest names, checking its sha256; the tests install the controller
// from the chart it pushed (installController, the README's quick start)
// once the signatures are checked (verifyRelease).
func publishRelease(tmp string) error {
	start := time.Now()
	releaseDir = filepath.Join(tmp, "release")
	if err := os.MkdirAll(releaseDir, 0o755); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(releaseDir)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	key := filepath.Join(tmp, "key", "cosign.key")
	host := "linux/" + runtime.GOARCH
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"release-key", "SIGN_KEY=" + key},
		{"release", "VERSION=" + releaseVersion, "REGISTRY=" + registry, "SIGN_KEY=" + key, "RELEASE_DIR=" + releaseDir,
			"RELEASE_PLATFORMS=" + host, "PLUGIN_PLATFORMS=" + runtime.GOOS + "/" + runtime.GOARCH, "PLUGIN_URL=http://" + l.Addr().String()},
	} {
		cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory"}, args...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=e2e-password", "MAKEFLAGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("make %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		fmt.Fprintf(os.Stderr, "e2e: make %s\n%s", args[0], out)
	}
	var rec struct {
		Image string `json:"image"`
	}
	data, err := os.ReadFile(filepath.Join(releaseDir, "release.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return err
	}
	releaseImage = rec.Image
	if err := krewInstall(filepath.Join(releaseDir, "teardown.yaml"), binDir); err != nil {
		return fmt.Errorf("installing the plugin from the krew manifest: %w", err)
	}
	// The plugin is the release's: it says its version.
	if out, err := exec.Command(filepath.Join(binDir, "kubectl-teardown"), "version").CombinedOutput(); err != nil || !strings.Contains(string(out), releaseVersion) {
		return fmt.Errorf("kubectl-teardown version: %v, want %s in:\n%s", err, releaseVersion, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: released %s (%s) and installed the plugin in %s\n", releaseVersion, releaseImage, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// verifyRelease checks the signatures of the release's image and chart
// with its public key, as a user does before installing (the README's
// quick start runs the same command), and that another key's check fails.
func verifyRelease() error {
	pub := filepath.Join(releaseDir, "cosign.pub")
	refs := []string{releaseImage, registry + "/charts/teardown:" + releaseVersion}
	out, err := exec.Command("go", append([]string{"-C", filepath.Join(root, "hack/tools/release"), "run", ".", "verify", "-key", pub}, refs...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("verify: %w\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: %s", out)
	other := filepath.Join(filepath.Dir(releaseDir), "other")
	if out, err := exec.Command("go", "-C", filepath.Join(root, "hack/tools/release"), "run", ".", "keygen", "-out", other).CombinedOutput(); err != nil {
		return fmt.Errorf("keygen: %w\n%s", err, out)
	}
	out, err = exec.Command("go", "-C", filepath.Join(root, "hack/tools/release"), "run", ".", "verify", "-key", other+".pub", releaseImage).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no valid signature") {
		return fmt.Errorf("verify with a key that did not sign the release: %v\n%s", err, out)
	}
	return nil
}

// krewManifest is what krewInstall reads of a krew plugin manifest.
type krewManifest struct {
	Spec struct {
		Version   string `json:"version"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// krewInstall does what `kubectl krew install --manifest` does (krew is not
// a Go module we can build here): pick the platform matching this
// machine's os and arch, download its uri, refuse it unless its sha256 is
// the manifest's, unpack it and install its bin as dir/kubectl-teardown,
// with the completion script beside it.
func krewInstall(manifest, dir string) error {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	var m krewManifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		return err
	}
	for _, p := range m.Spec.Platforms {
		if p.Selector.MatchLabels["os"] != runtime.GOOS || p.Selector.MatchLabels["arch"] != runtime.GOARCH {
			continue
		}
		resp, err := http.Get(p.URI)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", p.URI, resp.Status)
		}
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); got != p.SHA256 {
			return fmt.Errorf("%s: sha256 %s, the manifest says %s", p.URI, got, p.SHA256)
		}
		gz, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return err
		}
		tr := tar.NewReader(gz)
		found := false
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			to := ""
			switch h.Name {
			case p.Bin:
				to, found = "kubectl-teardown", true
			case "kubectl_complete-teardown":
				to = h.Name
			default:
				continue
			}
			f, err := os.OpenFile(filepath.Join(dir, to), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
		if !found {
			return fmt.Errorf("%s holds no %s", p.URI, p.Bin)
		}
		return nil
	}
	return fmt.Errorf("%s has no platform %s/%s", manifest, runtime.GOOS, runtime.GOARCH)
}
