/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"k8s.io/klog/v2"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestLazyValuesLogsTheSameLines: the controller's logger with WithValues
// deferred writes what the logger it wraps writes, line for line, for loggers
// made with values, names and levels in every order; sibling loggers made
// from one parent keep their own values.
func TestLazyValuesLogsTheSameLines(t *testing.T) {
	write := func(l logr.Logger) {
		l.Info("plain", "k", "v")
		parent := l.WithValues("policy", "ns/p", "target", klog.KRef("ns", "cm"))
		a := parent.WithValues("step", "a")
		b := parent.WithValues("step", "b")
		a.Info("from a", "n", 1)
		b.Info("from b")
		a.Info("from a again")
		parent.V(1).Info("verbose", "x", true)
		parent.V(5).Info("not logged")
		named := parent.WithName("runner").WithValues("after", "name")
		named.Info("named")
		named.Error(errors.New("boom"), "failed", "why", "test")
		// As controller-runtime's delegating logger does after every
		// WithValues, and as logging helpers do: the caller is the same.
		deep := named.WithCallDepth(1).WithValues("deep", 1).WithCallDepth(-1)
		deep.Info("call depth")
		helper := func(l logr.Logger) { l.WithCallDepth(1).Info("from a helper") }
		helper(a)
	}
	run := func(wrap func(logr.Logger) logr.Logger) []string {
		var buf bytes.Buffer
		// With the caller, so that a call depth lost or doubled shows.
		write(wrap(ctrlzap.New(ctrlzap.WriteTo(&buf), ctrlzap.UseDevMode(true), ctrlzap.RawZapOpts(zap.AddCaller()))))
		var lines []string
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			// The first field is the time.
			if _, rest, ok := strings.Cut(line, "\t"); ok {
				lines = append(lines, rest)
			}
		}
		return lines
	}
	// One call site for both, so that the error's stack trace (development
	// mode) is the same when the frames are.
	var got [2][]string
	for i, wrap := range []func(logr.Logger) logr.Logger{func(l logr.Logger) logr.Logger { return l }, LazyValues} {
		got[i] = run(wrap)
	}
	want := got[0]
	if len(want) < 8 {
		t.Fatalf("the plain logger wrote %d lines, want at least 8:\n%s", len(want), strings.Join(want, "\n"))
	}
	if diff := cmp.Diff(want, got[1]); diff != "" {
		t.Errorf("LazyValues logs other lines than the logger it wraps (-plain +lazy):\n%s", diff)
	}
}

// TestLazyValuesDefersEncoding: a WithValues whose logger logs nothing never
// reaches the sink it wraps; one that logs reaches it once.
func TestLazyValuesDefersEncoding(t *testing.T) {
	counter := &countingSink{}
	l := LazyValues(logr.New(counter))
	for range 100 {
		l.WithValues("object", "ns/name").V(2).Info("not logged")
	}
	if counter.withValues != 0 {
		t.Errorf("WithValues reached the sink %d times for loggers that logged nothing, want 0", counter.withValues)
	}
	logger := l.WithValues("object", "ns/name")
	logger.Info("one")
	logger.Info("two")
	if counter.withValues != 1 {
		t.Errorf("WithValues reached the sink %d times for one logger that logged twice, want 1", counter.withValues)
	}
}

type countingSink struct{ withValues int }

func (c *countingSink) Init(logr.RuntimeInfo)          {}
func (c *countingSink) Enabled(level int) bool         { return level == 0 }
func (c *countingSink) Info(int, string, ...any)       {}
func (c *countingSink) Error(error, string, ...any)    {}
func (c *countingSink) WithName(string) logr.LogSink   { return c }
func (c *countingSink) WithValues(...any) logr.LogSink { c.withValues++; return c }
