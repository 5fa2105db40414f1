/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"encoding/json"
	"maps"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxAnnotationName is the longest name part of a qualified name, and so of
// an annotation key.
const maxAnnotationName = 63

// FuzzProgressAnnotation checks the annotation keys built from finalizer
// names: bounded for any input, valid annotation keys for any name that
// ValidateName accepts, and different for different valid names, so two
// finalizers never share a progress record.
func FuzzProgressAnnotation(f *testing.F) {
	for _, seed := range [][2]string{
		{"example.com/cleanup", "example.com/other"},
		{"a.io/x", "a.io_x"},
		{"a.io/x_y", "a.io/x"},
		{"a-very-long-domain.example.com/" + strings.Repeat("x", 40), "a-very-long-domain.example.com/" + strings.Repeat("x", 41)},
		{strings.Repeat("a", 63), strings.Repeat("a", 64)},
		{strings.Repeat("a.", 100) + "io/" + strings.Repeat("b", 63), "kubernetes.io/pv-protection"},
		{"", "/"},
		{"é/" + strings.Repeat("é", 40), "\xff/\xfe"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, build := range []struct {
			name   string
			prefix string
			key    func(string) string
		}{
			{"ProgressAnnotation", ProgressAnnotationPrefix, ProgressAnnotation},
			{"AttachedAnnotation", AttachedAnnotationPrefix, AttachedAnnotation},
		} {
			ka, kb := build.key(a), build.key(b)
			name, ok := strings.CutPrefix(ka, build.prefix)
			if !ok {
				t.Fatalf("%s(%q) = %q, without the prefix %q", build.name, a, ka, build.prefix)
			}
			if len(name) > maxAnnotationName {
				t.Errorf("%s(%q) has a %d-byte name part, over %d", build.name, a, len(name), maxAnnotationName)
			}
			if again := build.key(a); again != ka {
				t.Errorf("%s(%q) gave %q, then %q", build.name, a, ka, again)
			}
			validA, validB := ValidateName(a) == nil, ValidateName(b) == nil
			if validA {
				errs := apivalidation.ValidateAnnotations(map[string]string{ka: "x"}, field.NewPath("metadata", "annotations"))
				if len(errs) > 0 {
					t.Errorf("%s(%q) = %q, which the API server rejects: %v", build.name, a, ka, errs.ToAggregate())
				}
			}
			if validA && validB && a != b && ka == kb {
				t.Errorf("%s gives the valid finalizers %q and %q the same key %q", build.name, a, b, ka)
			}
		}
	})
}

// FuzzReadProgress reads progress records from annotations anyone who may
// patch the object can write: it must not panic, must not change the
// annotations, must return no more records than there are progress
// annotations, each named, no larger than what was written, and ordered by
// finalizer.
func FuzzReadProgress(f *testing.F) {
	valid, err := json.Marshal(Progress{Finalizer: "a.io/x", State: StatePending, Message: "waiting", Attempts: 2,
		Updated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), NextAttempt: &time.Time{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("a.io_x", string(valid), "b.io_y", `{"finalizer":"b.io/y","state":"Done","attempts":1,"updated":"2026-01-02T03:04:05Z"}`, "other")
	f.Add("a.io_x", `{"finalizer":"a.io/x"}`, "a.io_y", `{"finalizer":"a.io/x","state":"Retry"}`, "")
	f.Add("", `{"finalizer":""}`, "x", `null`, `{}`)
	f.Add("x", `{"finalizer":"\ud800\udc00\xff","message":"\u003c\u003e","attempts":1e3}`, "y", `{"finalizer":1}`, "[]")
	f.Add("x", `{"finalizer":"a","updated":"99999-01-01T00:00:00Z","nextAttempt":"0000-01-01T00:00:00Z"}`, "y", `[`, `"`)
	f.Fuzz(func(t *testing.T, key1, value1, key2, value2, other string) {
		annotations := map[string]string{
			ProgressAnnotationPrefix + key1: value1,
			ProgressAnnotationPrefix + key2: value2,
			other:                           value1,
		}
		cm := &corev1.ConfigMap{}
		cm.Annotations = maps.Clone(annotations)
		got := ReadProgress(cm)
		if !maps.Equal(annotations, cm.Annotations) {
			t.Errorf("ReadProgress changed the annotations from %q to %q", annotations, cm.Annotations)
		}
		records, written := 0, 0
		for k, v := range annotations {
			if strings.HasPrefix(k, ProgressAnnotationPrefix) {
				records++
				written += len(v)
			}
		}
		if len(got) > records {
			t.Fatalf("ReadProgress returned %d records from %d progress annotations", len(got), records)
		}
		read := 0
		for _, p := range got {
			if p.Finalizer == "" {
				t.Errorf("ReadProgress returned a record without a finalizer: %+v", p)
			}
			read += len(p.Finalizer) + len(p.Message) + len(p.State)
			// Reading a record back by its finalizer must not panic either.
			readOneProgress(cm, p.Finalizer)
			waitBeforeNextAttempt(p, time.Now())
		}
		// Decoding replaces each invalid UTF-8 byte with U+FFFD, three bytes.
		if read > 3*written {
			t.Errorf("ReadProgress returned %d bytes of text from %d bytes of annotations", read, written)
		}
		if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i].Finalizer < got[j].Finalizer }) {
			t.Errorf("ReadProgress returned records out of order: %+v", got)
		}
	})
}

// FuzzProgressRoundTrip writes a record with progressPatch and reads it
// back: one annotation under ProgressAnnotation, bounded in size whatever
// the message, and read back as written (the message truncated).
func FuzzProgressRoundTrip(f *testing.F) {
	f.Add("a.io/x", "Pending", "waiting for the DNS records", 3, int64(1767323045), int64(0))
	f.Add("a-very-long-domain.example.com/"+strings.Repeat("x", 40), "Retry", strings.Repeat("<é>", 200), 0, int64(0), int64(1))
	f.Add("a.io/x", "Done", strings.Repeat("m", 254)+"é", -1, int64(-62135596800), int64(999999999))
	f.Add("", "", "", 0, int64(253402300800), int64(0))
	f.Fuzz(func(t *testing.T, fin, state, message string, attempts int, sec, nsec int64) {
		p := Progress{Finalizer: fin, State: State(state), Message: message, Attempts: attempts, Updated: time.Unix(sec, nsec).UTC()}
		data, err := progressPatch(p)
		if err != nil {
			if y := p.Updated.Year(); y >= 0 && y <= 9999 {
				t.Fatalf("progressPatch(%+v): %v", p, err)
			}
			return // encoding/json refuses times outside years 0-9999
		}
		var patch struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(data, &patch); err != nil {
			t.Fatalf("progressPatch wrote %s, which does not parse: %v", data, err)
		}
		if len(patch.Metadata.Annotations) != 1 {
			t.Fatalf("progressPatch sets %q, want one annotation", patch.Metadata.Annotations)
		}
		value, ok := patch.Metadata.Annotations[ProgressAnnotation(fin)]
		if !ok && utf8.ValidString(fin) {
			// JSON turns invalid UTF-8 into U+FFFD, key included; no valid
			// finalizer name has any.
			t.Fatalf("progressPatch sets %q, want %q", patch.Metadata.Annotations, ProgressAnnotation(fin))
		}
		for _, v := range patch.Metadata.Annotations {
			value = v
		}
		// JSON escapes a byte in at most 6 (\u003c); the rest is a few
		// fixed fields.
		if limit := 256 + 6*(len(fin)+len(state)+maxProgressMessage); len(value) > limit {
			t.Errorf("the record is %d bytes, over %d", len(value), limit)
		}
		cm := &corev1.ConfigMap{}
		cm.Annotations = patch.Metadata.Annotations
		if !utf8.ValidString(fin) {
			return
		}
		got, ok := readOneProgress(cm, fin)
		if !ok {
			t.Fatalf("readOneProgress does not read back %s", value)
		}
		wantMessage := message
		if len(wantMessage) > maxProgressMessage {
			wantMessage = wantMessage[:maxProgressMessage-3] + "..."
		}
		if got.Attempts != attempts || !got.Updated.Equal(p.Updated) {
			t.Errorf("read back %+v, want %+v", got, p)
		}
		if got.Finalizer != fin {
			t.Errorf("read back finalizer %q, want %q", got.Finalizer, fin)
		}
		if utf8.ValidString(state) && string(got.State) != state {
			t.Errorf("read back state %q, want %q", got.State, state)
		}
		if utf8.ValidString(wantMessage) && got.Message != wantMessage {
			t.Errorf("read back message %q, want %q", got.Message, wantMessage)
		}
		if n := len(ReadProgress(cm)); fin != "" && n != 1 {
			t.Errorf("ReadProgress returned %d records, want 1", n)
		}
	})
}
