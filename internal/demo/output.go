/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package demo holds the narrated scenarios of `make demo` (hack/demo): the
// teardown-controller started in-process against a local control plane, and
// a policy scenario printed step by step as a person would watch it with
// kubectl. Each scenario also checks what it narrates, so a demo that shows
// the wrong order fails instead of telling a story.
package demo

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// Output serializes whole lines from the narration, the control plane and
// the controllers' logs onto one writer.
type Output struct {
	mu sync.Mutex
	w  io.Writer
}

// NewOutput returns an Output writing to w.
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// Prefixed returns a writer that starts every line with prefix.
func (o *Output) Prefixed(prefix string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		var b bytes.Buffer
		for line := range bytes.Lines(p) {
			b.WriteString(prefix)
			b.Write(line)
		}
		if _, err := o.Write(b.Bytes()); err != nil {
			return 0, err
		}
		return len(p), nil
	})
}

// KlogErrors returns a writer for a klog text logger: every entry goes to
// all, and error entries (their header starts with E) also to errs. Each
// Write of a klog text logger is one whole entry.
func KlogErrors(all, errs io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		n, err := all.Write(p)
		if err == nil && len(p) > 0 && p[0] == 'E' {
			_, err = errs.Write(p)
		}
		return n, err
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Step prints a scenario step.
func Step(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "==> "+format+"\n", args...)
}

// Say prints a line under the current step.
func Say(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "    "+format+"\n", args...)
}
