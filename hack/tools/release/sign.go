/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// The signature layout cosign (v2) writes and `cosign verify --key` reads:
// an image tagged sha256-<hex>.sig in the signed artifact's repository, one
// layer per signature, each layer the simple-signing payload naming the
// signed digest, with the base64 signature of that payload in an annotation.
const (
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation    = "dev.cosignproject.cosign/signature"
	signatureTagSuffix     = ".sig"
)

// PasswordEnv holds the private key's password, as for cosign.
const PasswordEnv = "COSIGN_PASSWORD"

// SignatureTag is where the signatures of d are: REPO:sha256-<hex>.sig.
func SignatureTag(d name.Digest) (name.Tag, error) {
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return name.Tag{}, err
	}
	return d.Context().Tag(h.Algorithm + "-" + h.Hex + signatureTagSuffix), nil
}

// LoadSigner reads a private key: cosign's encrypted format (cosign
// generate-key-pair, make release-key), or an unencrypted PKCS#8 or EC PEM.
// The password is COSIGN_PASSWORD's value (empty when unset).
func LoadSigner(path string) (signature.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	pass := func(bool) ([]byte, error) { return []byte(os.Getenv(PasswordEnv)), nil }
	key, err := cryptoutils.UnmarshalPEMToPrivateKey(data, pass)
	if err != nil {
		return nil, fmt.Errorf("signing key %s (is %s right?): %w", path, PasswordEnv, err)
	}
	s, err := signature.LoadSigner(key, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return s, nil
}

// LoadVerifier reads a PEM public key (cosign.pub).
func LoadVerifier(path string) (signature.Verifier, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	return v, nil
}

// GenerateKey writes a cosign-format key pair: PREFIX.key, encrypted with
// COSIGN_PASSWORD (empty when unset, as cosign generate-key-pair allows), and
// PREFIX.pub.
func GenerateKey(prefix string) error {
	pass := func(bool) ([]byte, error) { return []byte(os.Getenv(PasswordEnv)), nil }
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), pass)
	if err != nil {
		return err
	}
	if err := os.WriteFile(prefix+".key", priv, 0o600); err != nil {
		return err
	}
	return os.WriteFile(prefix+".pub", pub, 0o644)
}

// Sign signs the artifact d (an image index, an image, a chart) and adds the
// signature to its signature image, keeping the signatures already there
// (a keyless one added by cosign, say). It returns the signature image's tag.
func Sign(ctx context.Context, d name.Digest, s signature.Signer, opts ...remote.Option) (name.Tag, error) {
	tag, err := SignatureTag(d)
	if err != nil {
		return name.Tag{}, err
	}
	body, err := json.Marshal(payload.Cosign{Image: d})
	if err != nil {
		return name.Tag{}, err
	}
	sig, err := s.SignMessage(bytes.NewReader(body))
	if err != nil {
		return name.Tag{}, fmt.Errorf("signing %s: %w", d, err)
	}
	layer := static.NewLayer(body, SimpleSigningMediaType)
	base, err := remote.Image(tag, append(opts, remote.WithContext(ctx))...)
	var terr *transport.Error
	switch {
	case errors.As(err, &terr) && terr.StatusCode == 404:
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	case err != nil:
		return name.Tag{}, fmt.Errorf("reading %s: %w", tag, err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:       layer,
		Annotations: map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		return name.Tag{}, err
	}
	if err := remote.Write(tag, img, append(opts, remote.WithContext(ctx))...); err != nil {
		return name.Tag{}, fmt.Errorf("pushing the signature %s: %w", tag, err)
	}
	return tag, nil
}

// Verify checks that ref (by tag or digest) has a signature by v's key, as
// `cosign verify --key` does offline: a layer of its signature image whose
// payload names ref's digest, signed by the key. It returns the digest.
func Verify(ctx context.Context, ref name.Reference, v signature.Verifier, opts ...remote.Option) (name.Digest, error) {
	opts = append(opts, remote.WithContext(ctx))
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("reading %s: %w", ref, err)
	}
	d := ref.Context().Digest(desc.Digest.String())
	tag, err := SignatureTag(d)
	if err != nil {
		return name.Digest{}, err
	}
	img, err := remote.Image(tag, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("%s has no signature (%s): %w", d, tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return name.Digest{}, err
	}
	var problems []string
	for _, l := range m.Layers {
		if l.MediaType != SimpleSigningMediaType {
			continue
		}
		if err := verifyLayer(img, l, d, v); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		return d, nil
	}
	if len(problems) == 0 {
		problems = append(problems, "no simple-signing layer")
	}
	return name.Digest{}, fmt.Errorf("no valid signature of %s by this key in %s: %s", d, tag, strings.Join(problems, "; "))
}

func verifyLayer(img v1.Image, l v1.Descriptor, d name.Digest, v signature.Verifier) error {
	sig, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation])
	if err != nil || len(sig) == 0 {
		return fmt.Errorf("layer %s: no signature annotation", l.Digest)
	}
	layer, err := img.LayerByDigest(l.Digest)
	if err != nil {
		return err
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		return err
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(buf.Bytes())); err != nil {
		return fmt.Errorf("layer %s: %w", l.Digest, err)
	}
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(buf.Bytes(), &p); err != nil {
		return fmt.Errorf("layer %s: payload: %w", l.Digest, err)
	}
	if p.Critical.Type != payload.CosignSignatureType {
		return fmt.Errorf("layer %s: payload type %q", l.Digest, p.Critical.Type)
	}
	if p.Critical.Image.DockerManifestDigest != d.DigestStr() {
		return fmt.Errorf("layer %s: signs %s, not %s", l.Digest, p.Critical.Image.DockerManifestDigest, d.DigestStr())
	}
	return nil
}
