/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"errors"
	"testing"

	"github.com/teardown-dev/teardown/internal/policy"
)

func TestServiceAccount(t *testing.T) {
	namespaced := func(sa string) *policy.Policy {
		return &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "shop", Name: "p"}, ServiceAccountName: sa}
	}
	cluster := &policy.Policy{Ref: policy.Ref{Kind: policy.KindCluster, Name: "c"}}
	cases := map[string]struct {
		def     string
		pol     *policy.Policy
		want    string
		wantErr error
	}{
		"named":                       {def: "default", pol: namespaced("cleaner"), want: "cleaner"},
		"the controller's default":    {def: "default", pol: namespaced(""), want: "default"},
		"no default: required":        {def: "", pol: namespaced(""), wantErr: ErrNoServiceAccount},
		"no default, named":           {def: "", pol: namespaced("cleaner"), want: "cleaner"},
		"a cluster policy acts as us": {def: "default", pol: cluster, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := (&Identities{DefaultServiceAccount: tc.def}).ServiceAccount(tc.pol)
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("ServiceAccount = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if got, want := Username("shop", "cleaner"), "system:serviceaccount:shop:cleaner"; got != want {
		t.Errorf("Username = %q, want %q", got, want)
	}
}
