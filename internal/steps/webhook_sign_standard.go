/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/teardown-dev/teardown/internal/policy"
)

// Headers of the Standard Webhooks form (https://www.standardwebhooks.com/),
// which receivers verify with an existing library. They are sent beside the
// older Teardown-Signature, which stays for one release (UPGRADING.md).
const (
	// WebhookIDHeader identifies the delivery: the same on every call of the
	// same step for the same object (DeliveryID), so a receiver can
	// deduplicate by it. Sent on every call, signed or not.
	WebhookIDHeader = "webhook-id"
	// WebhookTimestampHeader is the time of the call in Unix seconds. Sent
	// on every call, signed or not.
	WebhookTimestampHeader = "webhook-timestamp"
	// WebhookSignatureHeader is "v1,<base64 HMAC-SHA256>" of
	// "<webhook-id>.<webhook-timestamp>.<body>", keyed with StandardKey of
	// the policy's signing secret. Sent when the step has a signingSecretRef.
	WebhookSignatureHeader = "webhook-signature"
	// StandardSecretPrefix starts a signing secret in the Standard Webhooks
	// form: whsec_ and the base64 of the key.
	StandardSecretPrefix = "whsec_"
)

// ErrStandardSecret says a signing secret starts with whsec_ but the rest is
// not standard base64 of a key.
var ErrStandardSecret = errors.New("starts with " + StandardSecretPrefix + " but the rest is not standard base64 (padded, as the Standard Webhooks libraries decode it)")

// StandardKey is the HMAC key of the webhook-signature for a signing
// secret's stored value, as the Standard Webhooks libraries read a secret:
//   - whsec_<base64>: the decoded bytes (what NewWebhook("whsec_...") uses).
//     Surrounding whitespace, such as the newline a file-made Secret ends
//     with, is ignored: base64 has none.
//   - anything else: the bytes as stored (what NewWebhookRaw(secret) uses).
//
// The Teardown-Signature is always keyed with the bytes as stored, as it was
// before the Standard Webhooks headers.
func StandardKey(secret []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(secret)
	rest, ok := bytes.CutPrefix(trimmed, []byte(StandardSecretPrefix))
	if !ok {
		return secret, nil
	}
	key, err := base64.StdEncoding.DecodeString(string(rest))
	if err != nil || len(key) == 0 {
		return nil, ErrStandardSecret
	}
	return key, nil
}

// StandardSignature is the value of the webhook-signature header for a
// delivery id, the time of the call and the body, signed with key
// (StandardKey).
func StandardSignature(key []byte, id string, t time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(t.Unix(), 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// DeliveryID is the webhook-id of a webhook step's calls for one object: a
// hash of what makes the delivery, so that every call of the same delivery
// (after a transient error, an InProgress answer, a definitive failure the
// policy retries, a controller restart or fail-over) carries the same id,
// and no other delivery does:
//   - the object's UID (a recreated object is a new object);
//   - the policy's UID (a deleted and recreated policy is a new policy);
//   - the fingerprint of the policy's steps (an edit of the steps restarts
//     the teardown from its first step: its calls are new deliveries);
//   - the finalizer key the teardown runs under;
//   - the step's name (unique within the policy).
//
// It is not the time the step started: a step's start is recorded only when
// it does not finish at once, and a record that could not be written would
// change the id of a repeated call.
func DeliveryID(pol *policy.Policy, key, step string, t Object) string {
	h := sha256.New()
	for _, part := range []string{string(t.Obj.GetUID()), string(pol.UID), pol.Fingerprint, key, step} {
		// NUL never occurs in these, so the parts cannot run into each
		// other.
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "td_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// setSignatureHeaders sets the headers that identify and sign a call: the
// random Teardown-Delivery and the Standard Webhooks webhook-id and
// webhook-timestamp always; with a secret, Teardown-Signature (keyed with
// the secret as stored) and webhook-signature (keyed with StandardKey). An
// error is a secret in neither form; it never quotes the secret.
func setSignatureHeaders(h http.Header, secret []byte, id string, now time.Time, body []byte) error {
	h.Set(DeliveryHeader, deliveryID())
	// Set with the canonical form Go sends; the names are case-insensitive.
	h.Set(WebhookIDHeader, id)
	h.Set(WebhookTimestampHeader, strconv.FormatInt(now.Unix(), 10))
	if secret == nil {
		return nil
	}
	key, err := StandardKey(secret)
	if err != nil {
		return err
	}
	h.Set(SignatureHeader, Signature(secret, now, body))
	h.Set(WebhookSignatureHeader, StandardSignature(key, id, now, body))
	return nil
}
