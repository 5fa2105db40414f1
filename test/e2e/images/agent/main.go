/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command agent is the e2e tests' node agent (seed 004): like a real agent's
// shutdown (deregistering, flushing state), it keeps calling the API server
// with its ServiceAccount token for SHUTDOWN_SECONDS after SIGTERM. Every
// call's result, with the phase (running or shutdown), is POSTed to
// REPORT_URL, where the test reads it: what the agent would have lost if
// its ServiceAccount or RBAC went before it did.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("agent (teardown e2e)")
		return
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	shutdown, err := strconv.Atoi(getenv("SHUTDOWN_SECONDS", "10"))
	if err != nil {
		return fmt.Errorf("SHUTDOWN_SECONDS: %w", err)
	}
	report := os.Getenv("REPORT_URL")
	pod := os.Getenv("POD_NAME")
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	api := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	plain := &http.Client{Timeout: 5 * time.Second}

	call := func(phase string) {
		// The token is read each time: the kubelet rotates it.
		token, err := os.ReadFile(saDir + "/token")
		result := ""
		if err != nil {
			result = "no-token"
		} else {
			req, _ := http.NewRequest(http.MethodGet, api+"/api/v1/nodes?limit=1", nil)
			req.Header.Set("Authorization", "Bearer "+string(token))
			resp, err := hc.Do(req)
			if err != nil {
				result = "error"
			} else {
				resp.Body.Close()
				result = strconv.Itoa(resp.StatusCode)
			}
		}
		fmt.Printf("%s %s %s\n", time.Now().Format(time.RFC3339Nano), phase, result)
		if report != "" {
			body := fmt.Sprintf("%s %s %s", pod, phase, result)
			if resp, err := plain.Post(report, "text/plain", bytes.NewBufferString(body)); err == nil {
				resp.Body.Close()
			}
		}
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-sig:
			running = false
		case <-tick.C:
			call("running")
		}
	}
	end := time.Now().Add(time.Duration(shutdown) * time.Second)
	for time.Now().Before(end) {
		call("shutdown")
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
