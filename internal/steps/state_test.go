/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStartedByEarlierRelease: only a record bound to no object (the form
// an earlier release wrote) names a policy through StartedByEarlierRelease;
// a record of this release (bound to this object or another) is StartedBy's
// or nobody's, and what does not parse names no one.
func TestStartedByEarlierRelease(t *testing.T) {
	const key, uid = "example.com/k", "obj-uid"
	cases := map[string]struct {
		record      string
		wantEarlier types.UID
		wantStarted types.UID
	}{
		"an earlier release's record":      {`{"policy":"p-uid","fingerprint":"f","step":1,"name":"b","since":"2026-11-26T00:00:00Z"}`, "p-uid", ""},
		"a record bound to this object":    {`{"object":"obj-uid","policy":"p-uid","fingerprint":"f","step":1,"name":"b"}`, "", "p-uid"},
		"a record bound to another object": {`{"object":"other","policy":"p-uid","fingerprint":"f","step":1,"name":"b"}`, "", ""},
		"an earlier release's, no policy":  {`{"step":1}`, "", ""},
		"garbled":                          {`{"policy":`, "", ""},
		"too long to be one of ours":       {`{"policy":"p-uid","name":"` + strings.Repeat("x", maxStateAnnotation) + `"}`, "", ""},
		"no record":                        {"", "", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{UID: uid}
			if tc.record != "" {
				obj.Annotations = map[string]string{StateAnnotation(key): tc.record}
			}
			earlier, _ := StartedByEarlierRelease(obj, key)
			started, _ := (Records{}).StartedBy(obj, key)
			if earlier != tc.wantEarlier || started != tc.wantStarted {
				t.Errorf("StartedByEarlierRelease = %q, StartedBy = %q; want %q, %q", earlier, started, tc.wantEarlier, tc.wantStarted)
			}
		})
	}
}
