/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PolicyFinalizer is on every policy of either kind, so that deleting one
// first releases (or finishes) what it guards. It is a stable key
// (UPGRADING.md).
const PolicyFinalizer = "teardown.dev/release-guarded-objects"

// PolicyObject is either kind of policy: the two share their spec and status
// types, so code that reads or writes them needs no switch on the kind.
// +kubebuilder:object:generate=false
type PolicyObject interface {
	metav1.Object
	runtime.Object
	PolicySpec() *TeardownPolicySpec
	PolicyStatus() *TeardownPolicyStatus
}

var (
	_ PolicyObject = &TeardownPolicy{}
	_ PolicyObject = &ClusterTeardownPolicy{}
)

// PolicySpec returns the policy's spec.
func (p *TeardownPolicy) PolicySpec() *TeardownPolicySpec { return &p.Spec }

// PolicyStatus returns the policy's status.
func (p *TeardownPolicy) PolicyStatus() *TeardownPolicyStatus { return &p.Status }

// PolicySpec returns the policy's spec.
func (p *ClusterTeardownPolicy) PolicySpec() *TeardownPolicySpec { return &p.Spec }

// PolicyStatus returns the policy's status.
func (p *ClusterTeardownPolicy) PolicyStatus() *TeardownPolicyStatus { return &p.Status }
