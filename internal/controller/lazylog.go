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
	return logr.New(&lazySink{root: sink})
}

// lazySink is a LogSink whose values and call depth since its root are
// kept, not applied, until a line is logged: a chain of them, one per
// WithValues or WithCallDepth, each holding only what it was given.
// controller-runtime's delegating logger follows every WithValues with a
// WithCallDepth(-1), which zap answers with a copy of its logger; kept here,
// that costs nothing either unless a line is logged.
type lazySink struct {
	root   logr.LogSink // the sink the chain started from
	parent *lazySink    // nil at the root
	// values are the caller's own slice: WithValues' arguments are not
	// changed after the call (logr's callers pass them as literals).
	values []any
	depth  int

	once sync.Once
	full logr.LogSink
}

var _ logr.CallDepthLogSink = (*lazySink)(nil)

// Init does nothing: root was initialised when it was made, and adding our
// frame is LazyValues' job.
func (s *lazySink) Init(logr.RuntimeInfo) {}

// Enabled asks the root: values and call depth do not change what is enabled.
func (s *lazySink) Enabled(level int) bool { return s.root.Enabled(level) }

func (s *lazySink) Info(level int, msg string, keysAndValues ...any) {
	s.sink().Info(level, msg, keysAndValues...)
}

func (s *lazySink) Error(err error, msg string, keysAndValues ...any) {
	s.sink().Error(err, msg, keysAndValues...)
}

func (s *lazySink) WithValues(keysAndValues ...any) logr.LogSink {
	return &lazySink{root: s.root, parent: s, values: keysAndValues}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{root: s.sink().WithName(name)}
}

func (s *lazySink) WithCallDepth(depth int) logr.LogSink {
	return &lazySink{root: s.root, parent: s, depth: depth}
}

// sink is the root with the chain's values and call depths applied, once
// per link.
func (s *lazySink) sink() logr.LogSink {
	if s.parent == nil {
		return s.root
	}
	s.once.Do(func() {
		full := s.parent.sink()
		if len(s.values) > 0 {
			full = full.WithValues(s.values...)
		}
		if cd, ok := full.(logr.CallDepthLogSink); ok && s.depth != 0 {
			full = cd.WithCallDepth(s.depth)
		}
		s.full = full
	})
	return s.full
}
