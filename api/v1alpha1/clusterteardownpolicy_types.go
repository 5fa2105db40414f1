/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterTeardownPolicy guards objects across the cluster, cluster-scoped
// ones such as Namespaces included, with a finalizer and, when one of them is
// deleted, runs ordered cleanup steps before releasing it. Its targets may be
// limited to namespaces with a namespaceSelector, and its Jobs may run in a
// namespace of its choice.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ctdp,categories=teardown
// +kubebuilder:printcolumn:name="Finalizer",type=string,JSONPath=`.status.finalizer`
// +kubebuilder:printcolumn:name="Attach",type=string,JSONPath=`.spec.attach`
// +kubebuilder:printcolumn:name="Guarded",type=integer,JSONPath=`.status.guarded`
// +kubebuilder:printcolumn:name="Terminating",type=integer,JSONPath=`.status.terminating`
// +kubebuilder:printcolumn:name="Blocked",type=integer,JSONPath=`.status.blocked`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || has(self.spec.finalizer) || size(self.metadata.name) <= 63",message="a policy without spec.finalizer needs a name of at most 63 characters, because its finalizer key is derived from the name",fieldPath=".spec"
type ClusterTeardownPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec says which objects to guard and how to tear them down.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.steps) || self.steps.all(s, !has(s.job) || has(s.job.__namespace__))",message="a job step of a ClusterTeardownPolicy must set job.namespace, the namespace its Job runs in"
	// +kubebuilder:validation:XValidation:rule="!has(self.serviceAccountName)",message="a ClusterTeardownPolicy acts as the controller: serviceAccountName is for TeardownPolicy"
	Spec TeardownPolicySpec `json:"spec"`

	// status is what the controller observed and did; it writes it, users
	// read it.
	// +optional
	Status TeardownPolicyStatus `json:"status,omitzero"`
}

// ClusterTeardownPolicyList is a list of ClusterTeardownPolicy.
//
// +kubebuilder:object:root=true
type ClusterTeardownPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// items are the policies.
	Items []ClusterTeardownPolicy `json:"items"`
}
