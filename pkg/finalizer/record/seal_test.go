/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// joinSealer seals with its parts joined, to show what a seal covers.
type joinSealer struct{}

func (joinSealer) Seal(parts ...string) string { return strings.Join(parts, "+") }

func (joinSealer) Verify(seal string, parts ...string) bool { return seal == strings.Join(parts, "+") }

// TestReadAttachedSeal: the seal is read from its own annotation and
// checks only for the record, the object and the key it was made for;
// AttachedBy reads the record as before, sealed or not (an earlier
// release, and kubectl teardown, read it so).
func TestReadAttachedSeal(t *testing.T) {
	const key = "example.com/k"
	obj := func(value, seal string) *metav1.ObjectMeta {
		o := &metav1.ObjectMeta{UID: "u1", Annotations: map[string]string{AttachedAnnotation(key): value}}
		if seal != "" {
			o.Annotations[SealAnnotation(key)] = seal
		}
		return o
	}
	good := AttachedSeal(key, "u1", "p1", joinSealer{})
	for name, tc := range map[string]struct {
		obj        *metav1.ObjectMeta
		wantBound  bool
		wantChecks bool
	}{
		"sealed":                  {obj("u1/p1", good), true, true},
		"not sealed":              {obj("u1/p1", ""), true, false},
		"sealed for another one":  {obj("u1/p2", good), true, false},
		"another object's record": {obj("u2/p1", good), false, false},
	} {
		rec, ok := ReadAttached(tc.obj, key)
		checks := ok && rec.SealChecks(joinSealer{}, AttachedAnnotation(key), string(tc.obj.UID))
		if ok != tc.wantBound || checks != tc.wantChecks {
			t.Errorf("%s: bound %v, checks %v; want %v, %v", name, ok, checks, tc.wantBound, tc.wantChecks)
		}
		if by, ok := AttachedBy(tc.obj, key); ok != tc.wantBound || ok && by != strings.TrimPrefix(tc.obj.Annotations[AttachedAnnotation(key)], "u1/") {
			t.Errorf("%s: AttachedBy = %q, %v", name, by, ok)
		}
	}
	if (AttachedRecord{By: "p1", Seal: good}).SealChecks(nil, AttachedAnnotation(key), "u1") {
		t.Error("a seal checks without a sealer")
	}
}
