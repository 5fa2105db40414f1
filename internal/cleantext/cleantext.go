/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package cleantext makes text written by others (webhook answers, Job
// conditions, Events, status conditions) fit to repeat in annotations,
// Events, status and reports. It is a leaf package so that the controller's
// steps and the CLI's diagnosis engine, which links nothing of the
// controller, apply one rule.
package cleantext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns s as valid UTF-8 with no control or invisible formatting
// characters (line breaks and tabs become spaces, runs of spaces one), cut
// to at most max bytes with "..." at the cut.
func Clean(s string, max int) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == utf8.RuneError:
			continue // invalid UTF-8, or a replacement character: dropped either way
		case c == '\n' || c == '\r' || c == '\t' || c == '\u2028' || c == '\u2029':
			b.WriteByte(' ')
		case unicode.IsControl(c) || unicode.Is(unicode.Cf, c):
			continue // includes bidirectional overrides, which disguise text
		default:
			b.WriteRune(c)
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	if len(out) <= max {
		return out
	}
	const more = "..."
	if max < len(more) {
		return ""
	}
	cut := max - len(more)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + more
}
