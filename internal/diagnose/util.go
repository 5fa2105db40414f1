/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"
)

func joinNS(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func refPtr[T any](v T) *T { return &v }

func groupOf(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// TargetArg renders a ref as a kubectl TYPE/NAME argument (with -n).
func TargetArg(r ObjectRef) string {
	typ := strings.ToLower(r.Kind)
	if r.Resource != "" {
		typ = r.Resource
		if g := groupOf(r.APIVersion); g != "" {
			typ += "." + g
		}
	}
	s := typ + "/" + r.Name
	if r.Namespace != "" {
		s += " -n " + r.Namespace
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Age renders a duration the way kubectl's AGE column does (90s, 2m30s,
// 5h10m, 3d4h).
func Age(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	return duration.HumanDuration(d)
}

// ShortDuration is a Go duration without zero units: 5m, 1h30m, 90s → 1m30s.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Shorten cuts s to n runes (characters, as a CRD's maxLength counts
// them), marking the cut with "…"; it never splits a character.
func Shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string([]rune(s)[:n-1]) + "…"
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
