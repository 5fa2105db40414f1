/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package apitest checks the teardown.dev API against a real API server: the
// generated CRDs in config/crd/bases are installed into a local control plane
// (internal/testenv) and its admission must refuse invalid policies with a
// message a person understands, accept the samples in config/samples and
// apply the documented defaults. It has no code of its own, only tests.
package apitest
