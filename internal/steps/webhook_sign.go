/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// Headers of a signed webhook request.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>", the
	// HMAC keyed with the policy's signing secret over "<t>.<body>".
	//
	// Deprecated: sent beside the Standard Webhooks headers
	// (webhook_sign_standard.go) through the next release, then removed
	// (UPGRADING.md).
	SignatureHeader = "Teardown-Signature"
	// DeliveryHeader carries a random identifier of the request, for
	// receivers' logs. It is not covered by the signature.
	DeliveryHeader = "Teardown-Delivery"
	// SignatureTolerance is how far from the receiver's clock a signature's
	// timestamp should be accepted; older requests are replays.
	SignatureTolerance = 5 * time.Minute
	// DefaultSigningSecretKey is the key of the Secret read when
	// signingSecretRef names none.
	DefaultSigningSecretKey = "secret"
)

// maxSignatureHeader bounds a header VerifySignature reads.
const maxSignatureHeader = 1024

// Signature is the value of the Teardown-Signature header for body, signed
// with secret at time t.
func Signature(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors of VerifySignature.
var (
	ErrSignatureMalformed = errors.New("malformed " + SignatureHeader + " header")
	ErrSignatureMismatch  = errors.New("signature does not match")
	ErrSignatureExpired   = errors.New("signature timestamp is outside the tolerance")
)

// VerifySignature checks a Teardown-Signature header against body and
// secret: some v1 signature must match (compared in constant time) and its
// timestamp must be within tolerance of now. It is what a receiver does;
// examples/webhook-receiver has a standalone copy.
func VerifySignature(header string, secret, body []byte, now time.Time, tolerance time.Duration) error {
	if len(header) > maxSignatureHeader {
		return ErrSignatureMalformed
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrSignatureMalformed
		}
		switch k {
		case "t":
			if ts != "" {
				return ErrSignatureMalformed
			}
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return ErrSignatureMalformed
			}
			sigs = append(sigs, sig)
		}
	}
	if ts == "" || len(sigs) == 0 || strings.Trim(ts, "0123456789") != "" {
		return ErrSignatureMalformed
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrSignatureMalformed
	}
	want := mac(secret, ts, body)
	matched := false
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			matched = true
		}
	}
	if !matched {
		return ErrSignatureMismatch
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrSignatureExpired
	}
	return nil
}

// deliveryID is a random identifier for one request.
func deliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// secretTTL is how long a signing secret is reused before it is read again:
// a rotated secret is used within this long.
const secretTTL = time.Minute

// secretCacheKey names one read of one Secret key by one identity: a value
// read by one ServiceAccount is never handed to a policy acting as another.
type secretCacheKey struct {
	identity, namespace, name, key string
}

type secretCacheEntry struct {
	value   []byte
	expires time.Time
}

// secretCache keeps signing secrets for secretTTL, so that a webhook step
// does not GET its Secret on every call. Failures are not kept.
type secretCache struct {
	mu      sync.Mutex
	entries map[secretCacheKey]secretCacheEntry
}

func (c *secretCache) get(k secretCacheKey, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return e.value, true
}

func (c *secretCache) put(k secretCacheKey, v []byte, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[secretCacheKey]secretCacheEntry{}
	}
	for old, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, old)
		}
	}
	c.entries[k] = secretCacheEntry{value: v, expires: now.Add(secretTTL)}
}

// secretError is a failed read of a signing Secret: its message is the
// controller's own wording; the API error stays in the chain.
type secretError struct {
	msg string
	err error
}

func (e *secretError) Error() string { return e.msg }
func (e *secretError) Unwrap() error { return e.err }

// signingSecret reads the secret pol's webhook step signs with: from pol's
// namespace, as the identity pol's steps act with, for a TeardownPolicy;
// from the controller's namespace (WebhookOptions.ClusterResourceNamespace),
// as the controller, for a ClusterTeardownPolicy. Every error is transient
// (the Secret may be created or granted later) and names the Secret, never
// its value.
func (r *Runner) signingSecret(ctx context.Context, pol *policy.Policy, ref *teardownv1alpha1.SecretKeyReference) ([]byte, error) {
	namespace, identity := pol.Ref.Namespace, "controller"
	if pol.Ref.Kind == policy.KindCluster {
		namespace = r.HTTP.opts.ClusterResourceNamespace
		if namespace == "" {
			return nil, fmt.Errorf("the signing Secret %s of a ClusterTeardownPolicy is read from the controller's namespace, and the controller runs with no --cluster-resource-namespace", ref.Name)
		}
	} else if r.Identities != nil {
		sa, err := r.Identities.ServiceAccount(pol)
		if err != nil {
			return nil, err
		}
		identity = Username(namespace, sa)
	}
	key := ref.Key
	if key == "" {
		key = DefaultSigningSecretKey
	}
	shown := namespace + "/" + ref.Name
	ck := secretCacheKey{identity: identity, namespace: namespace, name: ref.Name, key: key}
	if v, ok := r.HTTP.secrets.get(ck, r.now()); ok {
		return v, nil
	}
	reader, _, err := r.clients(pol)
	if err != nil {
		return nil, err
	}
	var secret corev1.Secret
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &secret); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return nil, &secretError{msg: "signing Secret " + shown + " not found", err: err}
		case apierrors.IsForbidden(err):
			as := "the controller"
			if identity != "controller" {
				as = identity
			}
			return nil, &secretError{msg: as + " may not get the signing Secret " + shown, err: err}
		default:
			return nil, fmt.Errorf("reading the signing Secret %s: %w", shown, err)
		}
	}
	v := secret.Data[key]
	if len(v) == 0 {
		return nil, fmt.Errorf("signing Secret %s has no key %q, or it is empty", shown, key)
	}
	if _, err := StandardKey(v); err != nil {
		// Checked here, once per read, so that the message names the
		// Secret and its key (never the value).
		return nil, fmt.Errorf("signing Secret %s key %q %w", shown, key, err)
	}
	r.HTTP.secrets.put(ck, v, r.now())
	return v, nil
}
