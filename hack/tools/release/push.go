/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// SPDXMediaType is the artifactType of the SBOM referrers make image writes.
const SPDXMediaType = "application/spdx+json"

// RemoteOptions are the options of every registry call of the tool: the
// credentials of `docker login` (and of cosign and crane, the same file),
// and the referrers tag fallback for registries without the OCI 1.1
// referrers API.
func RemoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithReferrersTagFallback(true),
	}
}

// Ping fails with a clear error when the registry of repo cannot be reached
// or refuses us, before anything is built or pushed.
func Ping(ctx context.Context, repo name.Repository) error {
	auth, err := authn.DefaultKeychain.Resolve(repo.Registry)
	if err != nil {
		return fmt.Errorf("credentials for %s: %w", repo.RegistryStr(), err)
	}
	if _, err := transport.NewWithContext(ctx, repo.Registry, auth, http.DefaultTransport, []string{repo.Scope(transport.PushScope)}); err != nil {
		return fmt.Errorf("registry %s is unreachable: %w", repo.RegistryStr(), err)
	}
	return nil
}

// Pushed is what PushImage pushed.
type Pushed struct {
	Index v1.Hash   // the image index, tagged with the version
	SBOMs []v1.Hash // the SBOM referrers, one per platform
}

// PushImage pushes the image index of make image's OCI layout dir to repo,
// tagged tag, and the SPDX SBOMs beside it as OCI 1.1 referrers of each
// platform's manifest (the registry's referrers API lists them, or the
// referrers tag sha256-<hex> where it has none).
func PushImage(ctx context.Context, dir string, repo name.Repository, tag string) (*Pushed, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the image layout %s (make image): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	opts := RemoteOptions(ctx)
	out := &Pushed{}
	var index v1.ImageIndex
	for _, m := range im.Manifests {
		if m.MediaType.IsIndex() {
			if index != nil {
				return nil, fmt.Errorf("%s holds more than one image index", dir)
			}
			if index, err = top.ImageIndex(m.Digest); err != nil {
				return nil, err
			}
			out.Index = m.Digest
		}
	}
	if index == nil {
		return nil, fmt.Errorf("%s holds no image index (make image)", dir)
	}
	if err := remote.WriteIndex(repo.Tag(tag), index, opts...); err != nil {
		return nil, fmt.Errorf("pushing %s: %w", repo.Tag(tag), err)
	}
	for _, m := range im.Manifests {
		if m.ArtifactType != SPDXMediaType {
			continue
		}
		sbom, err := top.Image(m.Digest)
		if err != nil {
			return nil, err
		}
		if err := remote.Write(repo.Digest(m.Digest.String()), sbom, opts...); err != nil {
			return nil, fmt.Errorf("pushing the SBOM %s: %w", m.Digest, err)
		}
		out.SBOMs = append(out.SBOMs, m.Digest)
	}
	return out, nil
}
