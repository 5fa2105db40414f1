/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"errors"
	"reflect"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// ErrSuperseded is wrapped by a Guard's error: the object shows that a
// newer writer (a newer leader, a newer version of the cleanup) took the
// cleanup over, and the write decided on what this one knew is not made.
var ErrSuperseded = errors.New("superseded by a newer writer")

// Test is one JSON patch test a Guard adds to a write: the value at Path (a
// JSON pointer into the object) as read; nil tests that it is absent.
type Test = record.Test

// A Guard binds the writes Finalizers makes about a cleanup (removing its
// key, releasing it, recording its progress) to the state of the object
// they were decided on, for a controller whose writers can be superseded
// while they act: a replica that was paused past its leader-election lease
// and resumed, say. Without one, those writes test only the finalizer list
// (and, for a live object, that its deletion has not started).
type Guard interface {
	// Tests returns the tests key's write to obj, as read, carries in the
	// same patch, so the API server refuses the write if what it tests
	// changed; or an error wrapping ErrSuperseded when obj already shows a
	// newer writer, and the write is not made. Each failed test re-reads
	// the object and asks again.
	Tests(obj client.Object, key string) ([]Test, error)
}

// WithGuard makes every removal and progress record of these Finalizers
// carry g's tests.
func WithGuard(g Guard) Option { return func(f *Finalizers) { f.guard = g } }

// guardTests returns g's tests for key's write to obj: none without a
// Guard.
func guardTests(g Guard, obj client.Object, key string) ([]Test, error) {
	if g == nil {
		return nil, nil
	}
	return g.Tests(obj, key)
}

// adopt makes obj the handler's copy of it when the handler wrote the
// object (its copy holds the API server's answer, newer than obj): the
// writes that follow its answer are then tested against what it wrote, not
// against what it started from.
func adopt(obj, handlers client.Object) {
	if handlers == nil || handlers.GetUID() != obj.GetUID() || handlers.GetResourceVersion() == obj.GetResourceVersion() {
		return
	}
	dst, src := reflect.ValueOf(obj), reflect.ValueOf(handlers)
	if dst.Kind() != reflect.Pointer || dst.Type() != src.Type() || dst.IsNil() || src.IsNil() {
		return
	}
	dst.Elem().Set(src.Elem())
}
