/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// proc is one of the cluster's processes, its output in DIR/NAME.log.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// stopped is set once stop was asked: its exit is then expected.
	stopped atomic.Bool
}

// spawn starts bin with args, logging to DIR/name.log. If it exits before
// stop asked it to, the cluster's died channel says so.
func (c *cluster) spawn(name, bin string, args ...string) (*proc, error) {
	logFile, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If this process dies without stopping them, they die too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
		if !p.stopped.Load() {
			select {
			case c.died <- fmt.Errorf("%s exited: %v (log: %s)", name, p.err, logFile.Name()):
			default:
			}
		}
	}()
	c.procs = append(c.procs, p)
	return p, nil
}

// stop sends SIGTERM and waits up to grace, then kills.
func (p *proc) stop(grace time.Duration) {
	p.stopped.Store(true)
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHTTPS polls url (TLS not verified: it only tells whether the server
// answers 200) until it does, the process exits or timeout passes.
func waitHTTPS(ctx context.Context, p *proc, url string, cert *tls.Certificate, timeout time.Duration) error {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer %s within %s: %w", p.name, url, timeout, err)
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited while starting: %v", p.name, p.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// freePort returns a TCP port free on host now.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// nodeIP is the machine's first global IPv4 address: the API server listens
// there so that pods reach it (through the kubernetes Service and
// kube-proxy) and the node registers with it.
func nodeIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		if ipn.Contains(net.ParseIP(podGateway)) {
			continue // our own bridge, left by an earlier run
		}
		return ipn.IP.String(), nil
	}
	return "", fmt.Errorf("no global IPv4 address on this machine")
}
