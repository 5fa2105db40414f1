/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testImages are the main module's packages under test/e2e/images, each
// built by make image's builder (hack/tools/image: static, nonroot) and
// pushed as REGISTRY/e2e-NAME:dev; pause is also registry.k8s.io/pause:3.10
// (containerd's sandbox image and the README's app), through the mirror.
const testImagesDir = "test/e2e/images"

// startRegistry serves an in-memory registry on localhost (the node pulls
// from it by reference, as from any registry), pushes the controller image
// of make image and builds and pushes the test images.
func (c *cluster) startRegistry(ctx context.Context) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c.registry = fmt.Sprintf("localhost:%d", l.Addr().(*net.TCPAddr).Port)
	c.reg = &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := c.reg.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			select {
			case c.died <- fmt.Errorf("registry: %w", err):
			default:
			}
		}
	}()

	if _, err := os.Stat(filepath.Join(c.opts.ControllerImage, "index.json")); err == nil {
		if err := c.push(c.opts.ControllerImage, "teardown-controller:dev"); err != nil {
			return err
		}
	} else {
		c.logf("no controller image at %s (make image): not pushed", c.opts.ControllerImage)
	}
	entries, err := os.ReadDir(filepath.Join(c.opts.Repo, testImagesDir))
	if err != nil {
		return fmt.Errorf("listing the test images: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		out := c.path("images", e.Name())
		cmd := exec.CommandContext(ctx, "go", "-C", filepath.Join(c.opts.Repo, "hack/tools/image"), "run", ".",
			"-repo", c.opts.Repo, "-package", "./"+testImagesDir+"/"+e.Name(), "-name", e.Name(),
			"-platforms", "linux/"+goarch(), "-out", out, "-version", "e2e")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building test image %s: %w\n%s", e.Name(), err, b)
		}
		if err := c.push(out, "e2e-"+e.Name()+":dev"); err != nil {
			return err
		}
		if e.Name() == "pause" {
			if err := c.push(out, "pause:3.10"); err != nil {
				return err
			}
		}
	}
	return nil
}

// push pushes the OCI layout dir's index as REGISTRY/ref.
func (c *cluster) push(dir, ref string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		return fmt.Errorf("reading %s: %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return err
	}
	// The layout's index lists the image index make image built (and its
	// SBOMs beside it).
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	found := false
	for _, m := range im.Manifests {
		if m.MediaType.IsIndex() {
			if idx, err = idx.ImageIndex(m.Digest); err != nil {
				return err
			}
			found = true
			break
		}
	}
	if !found {
		return fmt.Errorf("%s holds no image index", dir)
	}
	r, err := name.ParseReference(c.registry + "/" + ref)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		return fmt.Errorf("pushing %s: %w", r, err)
	}
	d, _ := idx.Digest()
	c.logf("pushed %s (%s)", r, d)
	return nil
}

func goarch() string {
	out, err := exec.Command("go", "env", "GOARCH").Output()
	if err != nil {
		return "amd64"
	}
	return strings.TrimSpace(string(out))
}
