/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNoStripOnAGuess(t *testing.T) {
	for _, tc := range []struct {
		name, confidence, remedy, want string
	}{
		{"certain keeps the offer", ConfidenceCertain, "reinstall x; release only when it is gone", "reinstall x; release only when it is gone"},
		{"likely drops the offer", ConfidenceLikely, "reinstall x; release only when it is gone",
			"reinstall x; do not remove the finalizer by hand: its remover is identified as x only with likely confidence (e), and may still be running elsewhere"},
		{"a warning is not an offer", ConfidenceUnknown, "restart x; do not release: it is installed", "restart x; do not release: it is installed"},
		{"catalog strip dropped", ConfidenceUnknown, "or: run rancher-cleanup; strip only after confirming Rancher is gone",
			"or: run rancher-cleanup; do not remove the finalizer by hand: its remover is identified as x only with unknown confidence (e), and may still be running elsewhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := &Finding{Remedy: tc.remedy, Owner: &Owner{Component: "x", Confidence: tc.confidence, Evidence: []string{"e"}}}
			noStripOnAGuess(fd)
			if diff := cmp.Diff(tc.want, fd.Remedy); diff != "" {
				t.Errorf("remedy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNarrowToWriter(t *testing.T) {
	flux := []string{"kustomize-controller", "helm-controller"}
	for _, tc := range []struct {
		name, manager string
		want          []string
		narrowed      bool
	}{
		{"the writer among the product's controllers", "helm-controller", []string{"helm-controller"}, true},
		{"a writer that is not one of them", "argocd-server", flux, false},
		{"a generic writer", "kubectl-edit", flux, false},
		{"no writer", "", flux, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, narrowed := narrowToWriter(flux, tc.manager)
			if diff := cmp.Diff(tc.want, got); diff != "" || narrowed != tc.narrowed {
				t.Errorf("narrowed %v, candidates (-want +got):\n%s", narrowed, diff)
			}
		})
	}
}
