/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package installcheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckVersions(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		crds, controller, client string
		want                     Result
	}{
		{"one release", "v0.1.0", "0.1.0", "v0.1.0", Result{Name: "versions", Detail: "installed 0.1.0, as this binary"}},
		{"CRDs of another release", "v0.1.0", "v0.2.0", "v0.2.0", Result{Name: "versions", Failed: true,
			Detail: "the CRDs are of v0.1.0 but the controller of v0.2.0: upgrade them together (UPGRADING.md)"}},
		{"a plugin of another release", "v0.2.0", "v0.2.0", "v0.1.0", Result{Name: "versions", Warning: true,
			Detail: "installed v0.2.0, this binary v0.1.0: a different release may read the cluster differently"}},
		{"a development build is not compared", "v0.2.0", "v0.2.0", "v0.0.0-20261127005010-eb03352a1b2c+dirty",
			Result{Name: "versions", Detail: "installed v0.2.0"}},
		{"unknown", "", "v0.2.0", "unknown", Result{Name: "versions", Detail: "installed v0.2.0"}},
		{"without the controller's label, the CRDs'", "v0.2.0", "", "v0.2.0", Result{Name: "versions", Detail: "installed v0.2.0, as this binary"}},
		{"nothing labelled", "", "", "v0.2.0", Result{Name: "versions",
			Detail: "the installed version is not labelled (app.kubernetes.io/version): not compared"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, checkVersions(tc.crds, tc.controller, tc.client)); diff != "" {
				t.Errorf("checkVersions(%q, %q, %q) (-want +got):\n%s", tc.crds, tc.controller, tc.client, diff)
			}
		})
	}
}
