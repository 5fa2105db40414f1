/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/teardown-dev/teardown/bench/apimetrics"
	"github.com/teardown-dev/teardown/bench/debugserver"
	"github.com/teardown-dev/teardown/bench/scale"
)

// controllerProc is bench/cmd/teardown (the teardown-controller's manager
// plus pprof and /metrics on loopback) in its own process, so that its
// memory and CPU are its own.
type controllerProc struct {
	cmd   *exec.Cmd
	debug string
	done  chan error
	log   *os.File
}

func (s *scaler) startController(name string) (*controllerProc, error) {
	logFile, err := os.Create(filepath.Join(s.out, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig=" + s.env.Kubeconfig,
		"--status-interval=" + s.opts.statusInterval.String(),
		"--diagnose-after=" + s.opts.diagnoseAfter.String(),
		"--diagnose-interval=" + s.opts.diagnoseInterval.String(),
	}, s.opts.controllerArgs...)
	cmd := exec.Command(filepath.Join(s.out, "bin", "teardown"), args...)
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the controller: %w", err)
	}
	c := &controllerProc{cmd: cmd, done: make(chan error, 1), log: logFile}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), debugserver.AddressPrefix); ok {
				addr <- a
				continue
			}
			fmt.Fprintln(logFile, sc.Text())
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { c.done <- cmd.Wait() }()
	select {
	case c.debug = <-addr:
		return c, nil
	case err := <-c.done:
		logFile.Close()
		return nil, fmt.Errorf("the controller exited before it was ready: %w (see %s)", err, logFile.Name())
	case <-time.After(60 * time.Second):
		c.stop()
		return nil, fmt.Errorf("the controller did not announce its debug address within 60s (see %s)", logFile.Name())
	}
}

// stop ends the controller with SIGTERM, then SIGKILL after 15s.
func (c *controllerProc) stop() {
	defer c.log.Close()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		_ = err // told to stop: how it exits says nothing
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done //nolint:errcheck // killed: how it exits says nothing
	}
}

func (c *controllerProc) exited() error {
	select {
	case err := <-c.done:
		c.done <- err
		return fmt.Errorf("the controller exited: %w (see %s)", err, c.log.Name())
	default:
		return nil
	}
}

func (c *controllerProc) cpu() float64 { return cpuSeconds(c.cmd.Process.Pid) }

// memory returns VmRSS and VmHWM in bytes.
func (c *controllerProc) memory() (rss, hwm int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		fields := strings.Fields(value)
		if !ok || len(fields) != 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		switch name {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}

func (c *controllerProc) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.debug+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	return data, err
}

// heapInuse forces a garbage collection and returns HeapInuse after it.
func (c *controllerProc) heapInuse(ctx context.Context) (int64, error) {
	data, err := c.get(ctx, "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no HeapInuse in the heap profile")
}

// metric sums one series of the controller's /metrics.
func (c *controllerProc) metric(ctx context.Context, name string, match map[string]string) (float64, error) {
	return apimetrics.SumAt(ctx, "http://"+c.debug+"/metrics", name, match)
}

// focusedCPU records a CPU profile of window into path and returns the
// seconds spent under the functions focus matches, and in all.
func (c *controllerProc) focusedCPU(ctx context.Context, window time.Duration, focus, path string) (focused, total float64, err error) {
	data, err := c.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(window.Seconds())))
	if err != nil {
		return 0, 0, err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return 0, 0, err
	}
	out, err := exec.CommandContext(ctx, goTool(), "tool", "pprof", "-top", "-nodecount=100000", "-focus="+focus, path).CombinedOutput()
	focused, total, perr := scale.FocusedCPU(string(out))
	if errors.Is(perr, scale.ErrNoSamples) {
		return 0, 0, nil
	}
	if perr != nil {
		return 0, 0, fmt.Errorf("go tool pprof on %s: %w", path, errors.Join(err, perr))
	}
	return focused, total, nil
}

func goTool() string {
	if tool := os.Getenv("GO"); tool != "" {
		return tool
	}
	return "go"
}

// cpuSeconds returns a process's user+system CPU time from /proc/PID/stat.
func cpuSeconds(pid int) float64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	end := strings.LastIndexByte(string(stat), ')')
	if end < 0 {
		return 0
	}
	fields := strings.Fields(string(stat)[end+1:])
	if len(fields) < 13 {
		return 0
	}
	// utime and stime, in clock ticks of 1/100 s on Linux.
	u, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (u + st) / 100
}
