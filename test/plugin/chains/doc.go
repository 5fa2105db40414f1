/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package chains holds the kubectl-teardown scenarios of issue 11's
// families 4 to 6, which need a control plane of their own:
// kube-controller-manager runs the PersistentVolume binder and the pv- and
// pvc-protection controllers besides the garbage collector and the
// namespace controller (PV → PVC → pod chains, built by the real
// controllers), and the tests write to etcd behind the API server's back
// (a corrupt object, with the API server's
// AllowUnsafeMalformedObjectDeletion feature gate on so that it names the
// object as corrupt). The other scenarios are "why did it vanish" (Events
// of an absent object, such as the garbage collector's
// OwnerRefInvalidNamespace), "why is it still here" (an object whose owner
// is held in deletion) and an operator that ran in the namespace being
// deleted.
package chains
