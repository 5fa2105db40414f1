/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package v1alpha1 is the v1alpha1 version of the teardown.dev API: the
// TeardownPolicy (namespaced) and ClusterTeardownPolicy (cluster-scoped)
// resources that tell the teardown-controller which objects to guard with a
// finalizer and which ordered cleanup steps to run when one is deleted.
//
// The two kinds share one spec type, TeardownPolicySpec, and one status type,
// TeardownPolicyStatus. Validation lives in the kubebuilder markers of these
// types and is enforced by the API server through the generated CRDs in
// config/crd/bases; docs/api.md describes every field.
//
// +kubebuilder:object:generate=true
// +groupName=teardown.dev
package v1alpha1
