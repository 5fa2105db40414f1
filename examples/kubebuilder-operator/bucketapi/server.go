/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package bucketapi is a stand-in for an external system that a controller
// keeps in step with Kubernetes objects: a small HTTP API that creates and
// deletes buckets, its server (in memory, loopback only) and its client.
//
//	PUT    /buckets/{name}  201 Created, or 200 if it exists
//	GET    /buckets/{name}  200, or 404
//	DELETE /buckets/{name}  204 No Content, or 404 if it does not exist
package bucketapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Stats counts what the server was asked about one bucket and what it did.
type Stats struct {
	// CreateCalls counts PUTs; Creates counts buckets actually created.
	CreateCalls, Creates int
	// DeleteCalls counts DELETEs, failed ones included; Deletes counts
	// buckets actually deleted; FailedDeletes counts DELETEs answered with an
	// injected failure.
	DeleteCalls, Deletes, FailedDeletes int
}

// Server is the fake bucket service. Use it as an http.Handler (for example
// with httptest), or Start it on a loopback address.
type Server struct {
	mux *http.ServeMux

	mu          sync.Mutex
	buckets     map[string]bool
	stats       map[string]*Stats
	failDeletes int
}

// NewServer returns a server with no buckets.
func NewServer() *Server {
	s := &Server{mux: http.NewServeMux(), buckets: map[string]bool{}, stats: map[string]*Stats{}}
	s.mux.HandleFunc("PUT /buckets/{name}", s.create)
	s.mux.HandleFunc("GET /buckets/{name}", s.get)
	s.mux.HandleFunc("DELETE /buckets/{name}", s.delete)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// FailNextDeletes makes the next n DELETE calls fail with 503, whatever the
// bucket, as an outage of the external system would.
func (s *Server) FailNextDeletes(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failDeletes = n
}

// Exists reports whether bucket name exists.
func (s *Server) Exists(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buckets[name]
}

// Stats returns the counts for bucket name.
func (s *Server) Stats(name string) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.statsFor(name)
}

func (s *Server) statsFor(name string) *Stats {
	st, ok := s.stats[name]
	if !ok {
		st = &Stats{}
		s.stats[name] = st
	}
	return st
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.statsFor(name)
	st.CreateCalls++
	if s.buckets[name] {
		w.WriteHeader(http.StatusOK)
		return
	}
	s.buckets[name] = true
	st.Creates++
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if !s.Exists(r.PathValue("name")) {
		http.Error(w, "no such bucket", http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.statsFor(name)
	st.DeleteCalls++
	if s.failDeletes > 0 {
		s.failDeletes--
		st.FailedDeletes++
		http.Error(w, "bucket service is unavailable, try again", http.StatusServiceUnavailable)
		return
	}
	if !s.buckets[name] {
		http.Error(w, "no such bucket", http.StatusNotFound)
		return
	}
	delete(s.buckets, name)
	st.Deletes++
	w.WriteHeader(http.StatusNoContent)
}

// Start serves the API on addr, which must be a loopback address such as
// 127.0.0.1:0, until ctx is cancelled. It returns the API's base URL.
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("bucket API address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("bucket API address %q: the fake API serves only on a loopback IP address", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listening for the bucket API: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(fmt.Sprintf("serving the bucket API: %v", err))
		}
	}()
	return "http://" + l.Addr().String(), nil
}
