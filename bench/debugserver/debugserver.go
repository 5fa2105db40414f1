/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package debugserver serves net/http/pprof and the controller-runtime
// metrics registry of a controller under benchmark, on a loopback address
// only. The benchmark reads the address from the first line the process
// prints on standard output.
package debugserver

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// AddressPrefix starts the line that announces the address.
const AddressPrefix = "debug-address "

// FreeOSMemoryPath runs debug.FreeOSMemory: a garbage collection, then
// every free page back to the OS, for a floor of the process's RSS.
const FreeOSMemoryPath = "/debug/free-os-memory"

// Start listens on addr, which must be a loopback address such as
// 127.0.0.1:0, serves /debug/pprof/ and /metrics there, and prints
// "debug-address HOST:PORT" on standard output.
func Start(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("debug address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("debug address %q: only a loopback IP is allowed", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc(FreeOSMemoryPath, func(w http.ResponseWriter, _ *http.Request) {
		debug.FreeOSMemory()
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Fprintf(os.Stdout, "%s%s\n", AddressPrefix, ln.Addr())
	return nil
}
