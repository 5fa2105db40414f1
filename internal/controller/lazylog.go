/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"sync"

	"github.com/go-logr/logr"
)

// LazyValues returns l with WithValues deferred to the first line logged.
//
// zap encodes the values of WithValues at once, into a new encoder: the
// controller makes such loggers for every object it reconciles (the
// controller-runtime's reconcile logger, the policy and the steps' runner),
// and almost none of them ever logs a line at the default level. In the
// benchmark's CPU profiles that encoding was 6.5% of the controller's CPU
// (docs/performance.md, "Controller CPU"). Deferred, a WithValues costs a
// slice; a logger that logs hands its values to zap once, on its first line.
// What is logged is the same, values in the same order; a value is encoded
// when the first line is logged rather than when it was given, so values
// must not change after they are given (the controller's are strings and
// object references).
func LazyValues(l logr.Logger) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	// One frame more between the caller and zap: ours.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return logr.New(&lazySink{base: sink})
}

// lazySink is a LogSink whose values since base are kept, not encoded,
// until a line is logged.
type lazySink struct {
	base   logr.LogSink
	values []any

	once sync.Once
	full logr.LogSink
}

var _ logr.CallDepthLogSink = (*lazySink)(nil)

// Init does nothing: base was initialised when it was made, and adding our
// frame is LazyValues' job.
func (s *lazySink) Init(logr.RuntimeInfo) {}

func (s *lazySink) Enabled(level int) bool { return s.base.Enabled(level) }

func (s *lazySink) Info(level int, msg string, keysAndValues ...any) {
	s.sink().Info(level, msg, keysAndValues...)
}

func (s *lazySink) Error(err error, msg string, keysAndValues ...any) {
	s.sink().Error(err, msg, keysAndValues...)
}

func (s *lazySink) WithValues(keysAndValues ...any) logr.LogSink {
	// The full slice expression makes append copy: loggers made from one
	// parent never share an array.
	return &lazySink{base: s.base, values: append(s.values[:len(s.values):len(s.values)], keysAndValues...)}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{base: s.sink().WithName(name)}
}

func (s *lazySink) WithCallDepth(depth int) logr.LogSink {
	cd, ok := s.base.(logr.CallDepthLogSink)
	if !ok {
		return s
	}
	return &lazySink{base: cd.WithCallDepth(depth), values: s.values}
}

// sink is base with the values, encoded once.
func (s *lazySink) sink() logr.LogSink {
	if len(s.values) == 0 {
		return s.base
	}
	s.once.Do(func() { s.full = s.base.WithValues(s.values...) })
	return s.full
}
