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
	"github.com/teardown-dev/teardown/bench/report"
)

// child is a controller under benchmark, in its own process so that its
// memory and CPU are its own.
type child struct {
	name  string
	queue string // its target workqueues' names, comma-separated
	cmd   *exec.Cmd
	debug string // host:port of /debug/pprof and /metrics
	done  chan error
	log   *os.File
}

// buildChildren builds the controllers under benchmark into dir.
func buildChildren(ctx context.Context, dir string) error {
	for _, pkg := range []string{"teardown", "baseline"} {
		cmd := exec.CommandContext(ctx, goTool(), "build", "-o", filepath.Join(dir, pkg), "./bench/cmd/"+pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building bench/cmd/%s: %w", pkg, err)
		}
	}
	return nil
}

// buildBefore builds the teardown-controller of the checkout in dir into
// bin/teardown-before.
func buildBefore(ctx context.Context, dir, bin string) error {
	out, err := filepath.Abs(filepath.Join(bin, report.TeardownBefore))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", out, "./bench/cmd/teardown")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building bench/cmd/teardown in %s: %w", dir, err)
	}
	return nil
}

// describeCheckout names dir and its commit, for the results.
func describeCheckout(dir string) string {
	if dir == "" {
		return ""
	}
	commit, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%h %s").Output()
	if err != nil {
		return dir
	}
	return dir + " at " + strings.TrimSpace(string(commit))
}

func goTool() string {
	if tool := os.Getenv("GO"); tool != "" {
		return tool
	}
	return "go"
}

// startChild starts bin with the admin kubeconfig and args, logging to
// logs/<name>.log, and waits for it to announce its debug address.
func (b *bench) startChild(name, queue, bin string, args ...string) (*child, error) {
	logFile, err := os.Create(filepath.Join(b.out, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig=" + b.env.Kubeconfig}, args...)...)
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), b.opts.childEnv...)
	// Die with the benchmark even if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, queue: queue, cmd: cmd, done: make(chan error, 1), log: logFile}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, debugserver.AddressPrefix); ok {
				addr <- a
				continue
			}
			fmt.Fprintln(logFile, line)
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { c.done <- cmd.Wait() }()
	select {
	case c.debug = <-addr:
		return c, nil
	case err := <-c.done:
		logFile.Close()
		return nil, fmt.Errorf("%s exited before it was ready: %w (see %s)", name, err, logFile.Name())
	case <-time.After(60 * time.Second):
		c.stop()
		return nil, fmt.Errorf("%s did not announce its debug address within 60s (see %s)", name, logFile.Name())
	}
}

// stop ends the child with SIGTERM, then SIGKILL after 15s.
func (c *child) stop() {
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

func (c *child) pid() int { return c.cmd.Process.Pid }

// exited reports an early exit.
func (c *child) exited() error {
	select {
	case err := <-c.done:
		c.done <- err
		return fmt.Errorf("%s exited: %w (see %s)", c.name, err, c.log.Name())
	default:
		return nil
	}
}

// memoryUse is what /proc/PID/status says of a child's memory, in bytes.
type memoryUse struct {
	rss  int64 // VmRSS
	anon int64 // RssAnon: heap, stacks; not the binary's pages from the page cache
	hwm  int64 // VmHWM
}

// memory reads the child's memory use.
func (c *child) memory() (memoryUse, error) {
	var m memoryUse
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.pid()))
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		switch name {
		case "VmRSS":
			m.rss = kb << 10
		case "RssAnon":
			m.anon = kb << 10
		case "VmHWM":
			m.hwm = kb << 10
		}
	}
	if m.rss == 0 {
		return m, errors.New("no VmRSS in " + c.name + "'s /proc status")
	}
	return m, nil
}

func (c *child) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.debug+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s: %w", path, c.name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("reading %s of %s: HTTP %d", path, c.name, resp.StatusCode)
	}
	return data, err
}

// queueState reads the target workqueues' adds so far, their depth, and
// their busy workers, summed over the child's queues (comma-separated: the
// teardown-controller has one queue for attaching, one for cleanups).
func (c *child) queueState(ctx context.Context) (adds, busy float64, err error) {
	data, err := c.get(ctx, "/metrics")
	if err != nil {
		return 0, 0, err
	}
	for _, q := range strings.Split(c.queue, ",") {
		a, _, err := apimetrics.Sum(data, "workqueue_adds_total", map[string]string{"name": q})
		if err != nil {
			return 0, 0, err
		}
		depth, _, err := apimetrics.Sum(data, "workqueue_depth", map[string]string{"name": q})
		if err != nil {
			return 0, 0, err
		}
		active, _, err := apimetrics.Sum(data, "controller_runtime_active_workers", map[string]string{"controller": q})
		if err != nil {
			return 0, 0, err
		}
		adds, busy = adds+a, busy+depth+active
	}
	return adds, busy, nil
}

// waitIdle waits until the controller has taken at least minAdds requests
// into its target queue and has nothing queued or in progress, twice in a
// row 100ms apart.
func (c *child) waitIdle(ctx context.Context, minAdds float64, timeout time.Duration) error {
	quiet := 0
	return waitFor(ctx, timeout, c.name+" to be idle", func() (bool, string) {
		if err := c.exited(); err != nil {
			return false, err.Error()
		}
		adds, busy, err := c.queueState(ctx)
		if err != nil {
			return false, err.Error()
		}
		if adds >= minAdds && busy == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if quiet >= 2 {
			return true, ""
		}
		time.Sleep(80 * time.Millisecond)
		return false, fmt.Sprintf("%.0f of %.0f adds, %.0f queued or in progress", adds, minAdds, busy)
	})
}

// heapInuse forces a garbage collection in the child and returns the bytes
// of heap spans in use after it.
func (c *child) heapInuse(ctx context.Context) (int64, error) {
	data, err := c.get(ctx, "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no HeapInuse in " + c.name + "'s heap profile")
}

// floorRSS asks the child to return every free page to the OS
// (debug.FreeOSMemory, after a garbage collection) and reads VmRSS then.
func (c *child) floorRSS(ctx context.Context) (int64, error) {
	if _, err := c.get(ctx, debugserver.FreeOSMemoryPath); err != nil {
		return 0, err
	}
	m, err := c.memory()
	return m.rss, err
}

// heapProfile saves a heap profile, taken after a forced garbage
// collection, into path.
func (c *child) heapProfile(ctx context.Context, path string) error {
	data, err := c.get(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// cpuProfile records a CPU profile of seconds into path.
func (c *child) cpuProfile(ctx context.Context, seconds int, path string) error {
	data, err := c.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds))
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
