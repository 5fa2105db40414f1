/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package recordseal proves the records the controller writes on the
// objects it guards without any admission policy: each record carries a
// seal, an HMAC of what it says under a key only the controller holds (a
// Secret of its own namespace), so that a record anyone else wrote, or
// copied from another object, reads as unproven.
//
// An HMAC rather than a signature: the controller is the only one that
// writes and the only one that checks, so a shared key is enough, and a
// seal fits in an annotation beside the record (a UID and a policy UID
// leave 54 bytes of the attached record's 128). The keys are named; a
// record says which one sealed it, so that keys rotate without losing the
// progress sealed under the old one (docs/security.md, "Records that prove
// themselves").
package recordseal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// macBytes is how much of the HMAC-SHA256 a seal keeps: 128 bits, as
// enough against forgery as the whole for a value checked online.
const macBytes = 16

// minKeyBytes is the shortest key accepted.
const minKeyBytes = 32

// keyID is what a key may be named: a seal is "<id>.<mac>".
var keyID = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?$`)

// Keyring seals with one key and checks with every key it holds. Immutable
// once made; safe for concurrent use. A nil Keyring seals nothing and
// proves nothing.
type Keyring struct {
	keys    map[string][]byte
	sealing string
	since   time.Time
}

// New returns a Keyring of keys (named by their ID), sealing with the
// greatest ID, whose records count from since (when the first key was made:
// a record without a seal on an object created later is unproven).
func New(keys map[string][]byte, since time.Time) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("no key")
	}
	k := &Keyring{keys: map[string][]byte{}, since: since}
	for id, key := range keys {
		if !keyID.MatchString(id) {
			return nil, fmt.Errorf("key %q: an ID is 1 to 16 lowercase letters, digits and '-', starting and ending with a letter or digit", id)
		}
		if len(key) < minKeyBytes {
			return nil, fmt.Errorf("key %q: %d bytes, want at least %d", id, len(key), minKeyBytes)
		}
		k.keys[id] = slices.Clone(key)
	}
	ids := make([]string, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	k.sealing = slices.Max(ids)
	return k, nil
}

// Since is when records began to be sealed: an unsealed record on an
// object created before it was written before there were keys (an earlier
// release's, or this one's before its keys were made).
func (k *Keyring) Since() time.Time {
	if k == nil {
		return time.Time{}
	}
	return k.since
}

// Sealing is the ID of the key that seals.
func (k *Keyring) Sealing() string {
	if k == nil {
		return ""
	}
	return k.sealing
}

// Seal returns the seal of parts under the sealing key: "<id>.<mac>", in
// characters an annotation value, a JSON string and a URL keep as they
// are. "" from a nil Keyring.
func (k *Keyring) Seal(parts ...string) string {
	if k == nil {
		return ""
	}
	return k.sealing + "." + base64.RawURLEncoding.EncodeToString(mac(k.keys[k.sealing], parts))
}

// Verify reports whether seal is the seal of parts under a key k holds.
func (k *Keyring) Verify(seal string, parts ...string) bool {
	if k == nil {
		return false
	}
	id, sum, ok := strings.Cut(seal, ".")
	key, known := k.keys[id]
	if !ok || !known || len(sum) != base64.RawURLEncoding.EncodedLen(macBytes) {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sum)
	if err != nil {
		return false
	}
	return hmac.Equal(got, mac(key, parts))
}

// mac is the HMAC of parts, each length-prefixed so that no two lists of
// parts hash alike.
func mac(key []byte, parts []string) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return h.Sum(nil)[:macBytes]
}
