/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cleantext

import (
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 256, "plain"},
		{"a\r\nb\tc", 256, "a b c"},
		{"a\n\tb", 10, "a b"},
		{"bell\x07 esc\x1b[31m red", 256, "bell esc[31m red"},
		{"x\x1b[31my\u202ez", 20, "x[31myz"},
		{"bidi \u202e\u2066evil", 256, "bidi evil"},
		{"bad \xff utf8", 256, "bad utf8"},
		{"héllo wörld", 8, "héll..."},
		{"日本語日本語", 10, "日本..."},
		{strings.Repeat("é", 10), 9, "ééé..."},
		{"abc", 2, ""},
	} {
		if got := Clean(tc.in, tc.max); got != tc.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
