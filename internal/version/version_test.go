/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package version

import (
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	saved := [3]string{Version, Commit, Date}
	t.Cleanup(func() { Version, Commit, Date = saved[0], saved[1], saved[2] })
	Version, Commit, Date = "v1.2.3", "abc123", "2026-11-22T00:00:00Z"
	got := Get()
	if got.Version != "v1.2.3" || got.Commit != "abc123" || got.Date != "2026-11-22T00:00:00Z" {
		t.Errorf("Get() = %+v, want the -ldflags values", got)
	}
	if s := got.String(); !strings.HasPrefix(s, "v1.2.3 (commit abc123, built 2026-11-22T00:00:00Z, go") {
		t.Errorf("String() = %q", s)
	}
	Version, Commit, Date = "", "", ""
	got = Get()
	if got.Version == "" || got.Commit == "" || got.Date == "" {
		t.Errorf("Get() without -ldflags = %+v, want every field set (build info or unknown)", got)
	}
}
