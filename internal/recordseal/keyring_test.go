/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package recordseal

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, minKeyBytes) }

// TestSealAndVerify: a seal checks only for the very parts it was made of,
// under a key the ring holds; a ring with a newer key seals with it and
// still checks what the older one sealed (rotation keeps progress).
func TestSealAndVerify(t *testing.T) {
	old, err := New(map[string][]byte{"2026-01-01": key(1)}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	seal := old.Seal("annotation", "record")
	if !strings.HasPrefix(seal, "2026-01-01.") || !old.Verify(seal, "annotation", "record") {
		t.Fatalf("seal %q does not check", seal)
	}
	for name, parts := range map[string][]string{
		"another record":        {"annotation", "record2"},
		"another annotation":    {"annotation2", "record"},
		"parts joined":          {"annotationrecord"},
		"parts split elsewhere": {"annotatio", "nrecord"},
		"no parts":              nil,
	} {
		if old.Verify(seal, parts...) {
			t.Errorf("%s: the seal checks", name)
		}
	}
	for name, forged := range map[string]string{
		"empty":         "",
		"no key ID":     seal[strings.Index(seal, ".")+1:],
		"unknown key":   "2026-01-02" + seal[strings.Index(seal, "."):],
		"one bit off":   seal[:len(seal)-1] + map[bool]string{true: "B", false: "A"}[seal[len(seal)-1] == 'A'],
		"truncated":     seal[:len(seal)-2],
		"not base64url": seal[:len(seal)-1] + "=",
	} {
		if old.Verify(forged, "annotation", "record") {
			t.Errorf("%s (%q): checks", name, forged)
		}
	}
	other, _ := New(map[string][]byte{"2026-01-01": key(2)}, time.Time{})
	if other.Verify(seal, "annotation", "record") {
		t.Error("a seal checks under another key of the same ID")
	}

	rotated, err := New(map[string][]byte{"2026-01-01": key(1), "2026-06-01": key(3)}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Sealing() != "2026-06-01" || !strings.HasPrefix(rotated.Seal("x"), "2026-06-01.") {
		t.Errorf("a ring seals with %q, want its greatest ID", rotated.Sealing())
	}
	if !rotated.Verify(seal, "annotation", "record") {
		t.Error("after rotation, what the old key sealed no longer checks")
	}

	var none *Keyring
	if none.Seal("x") != "" || none.Verify(seal, "annotation", "record") || !none.Since().IsZero() {
		t.Error("a nil Keyring seals or proves something")
	}
}

// TestNewRefusesBadKeys: the keys a Secret holds are input: a short key or
// an ID a seal cannot carry is refused with a message naming it.
func TestNewRefusesBadKeys(t *testing.T) {
	for name, tc := range map[string]struct {
		keys map[string][]byte
		want string
	}{
		"none":          {map[string][]byte{}, "no key"},
		"short":         {map[string][]byte{"k1": []byte("short")}, `key "k1": 5 bytes, want at least 32`},
		"dot in the ID": {map[string][]byte{"k.1": key(1)}, `key "k.1": an ID is`},
		"upper case":    {map[string][]byte{"K1": key(1)}, `key "K1"`},
		"too long":      {map[string][]byte{strings.Repeat("k", 17): key(1)}, "an ID is 1 to 16"},
	} {
		if _, err := New(tc.keys, time.Time{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}
