/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"net/http"
	"sync"
	"time"
)

// Whose clock a time was judged by.
const (
	ClockAPIServer = "apiServer"
	ClockLocal     = "local"
)

// ServerNow is the API server's time when its answers gave it, with
// ClockAPIServer, else local with ClockLocal.
func (c *Cluster) ServerNow(local time.Time) (time.Time, string) {
	return c.clock.now(local)
}

// serverClock is the offset of the API server's clock from this machine's,
// learnt from the Date header of its responses (one-second resolution).
type serverClock struct {
	mu     sync.Mutex
	offset time.Duration
	seen   bool
}

// now returns the API server's time when it is known, else local's.
func (s *serverClock) now(local time.Time) (time.Time, string) {
	if s == nil {
		return local, ClockLocal
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen {
		return local, ClockLocal
	}
	return local.Add(s.offset), ClockAPIServer
}

// dateRecorder records the Date header of every response.
type dateRecorder struct {
	next  http.RoundTripper
	clock *serverClock
}

// RoundTrip records the Date header of the response.
func (d *dateRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if date, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
		// Date is truncated to the second: the server's time was within
		// the second after it.
		offset := time.Until(date.Add(500 * time.Millisecond))
		d.clock.mu.Lock()
		d.clock.offset, d.clock.seen = offset, true
		d.clock.mu.Unlock()
	}
	return resp, nil
}
