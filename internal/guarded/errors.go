/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package guarded

import (
	"errors"
	"io"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// isCleanupError reports whether err holds a failed cleanup (a handler's
// Retry), which backs off as a failure, whatever caused it.
func isCleanupError(err error) bool {
	var ce *finalizer.CleanupError
	return errors.As(err, &ce)
}

// apiUnavailable reports whether err says the API server was away or
// overloaded, rather than that it refused what was asked.
func apiUnavailable(err error) bool {
	var netErr net.Error
	switch {
	case apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err):
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNABORTED):
		return true
	case errors.As(err, &netErr):
		return true
	}
	return false
}
