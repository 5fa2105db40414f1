/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// APIServerRestart says how RestartAPIServer takes kube-apiserver down.
type APIServerRestart struct {
	// Graceful stops kube-apiserver with SIGTERM and waits for it to exit
	// (at most two minutes, then SIGKILL); otherwise it is killed with
	// SIGKILL at once.
	Graceful bool
	// Down is how long it stays down once it has exited.
	Down time.Duration
}

// RestartAPIServer stops kube-apiserver and starts it again with the same
// arguments, certificates, port and etcd, so that Config, Kubeconfig and the
// users AddUser made keep working; it returns once /readyz answers. Clients
// see an outage, as in a cluster whose API server restarts.
func (e *Env) RestartAPIServer(r APIServerRestart) error {
	pid, exe, args, err := e.apiServerProcess()
	if err != nil {
		return err
	}
	sig := syscall.SIGKILL
	if r.Graceful {
		sig = syscall.SIGTERM
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signalling kube-apiserver (pid %d): %w", pid, err)
	}
	if err := e.waitAPIServerExit(pid, 2*time.Minute); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if err := e.waitAPIServerExit(pid, 10*time.Second); err != nil {
			return err
		}
	}
	time.Sleep(r.Down)

	logPath := filepath.Join(e.Dir, fmt.Sprintf("kube-apiserver-%d.log", time.Now().UnixNano()))
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating the kube-apiserver log: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	e.apiServer, e.apiServerDone = cmd, done
	if err := e.waitAPIServerReady(done, 2*time.Minute); err != nil {
		data, _ := os.ReadFile(logPath)
		return fmt.Errorf("%w\n%s", err, tail(data, 20))
	}
	return nil
}

// apiServerProcess finds the running kube-apiserver: the one RestartAPIServer
// started, or envtest's, a child of this process.
func (e *Env) apiServerProcess() (pid int, exe string, args []string, err error) {
	if e.apiServer != nil {
		select {
		case <-e.apiServerDone:
			return 0, "", nil, errors.New("kube-apiserver is not running")
		default:
		}
		return e.apiServer.Process.Pid, e.apiServer.Path, e.apiServer.Args[1:], nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, "", nil, fmt.Errorf("finding kube-apiserver: %w", err)
	}
	self := os.Getpid()
	for _, d := range entries {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		ppid, comm, state, ok := procStat(p)
		if !ok || ppid != self || comm != "kube-apiserver" || state == "Z" {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		if err != nil {
			return 0, "", nil, fmt.Errorf("reading kube-apiserver's executable: %w", err)
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err != nil {
			return 0, "", nil, fmt.Errorf("reading kube-apiserver's arguments: %w", err)
		}
		parts := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
		return p, exe, parts[1:], nil
	}
	return 0, "", nil, errors.New("kube-apiserver not found among this process's children")
}

// procStat reads the parent, name and state of a process from
// /proc/<pid>/stat.
func procStat(pid int) (ppid int, comm, state string, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", "", false
	}
	// pid (comm) state ppid ...; comm may contain spaces and parentheses.
	open, closing := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return 0, "", "", false
	}
	fields := strings.Fields(string(data[closing+1:]))
	if len(fields) < 2 {
		return 0, "", "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, "", "", false
	}
	return ppid, string(data[open+1 : closing]), fields[0], true
}

func (e *Env) waitAPIServerExit(pid int, timeout time.Duration) error {
	if e.apiServer != nil && e.apiServer.Process.Pid == pid {
		select {
		case <-e.apiServerDone:
			return nil
		case <-time.After(timeout):
			return fmt.Errorf("kube-apiserver (pid %d) did not exit within %s", pid, timeout)
		}
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, _, state, ok := procStat(pid); !ok || state == "Z" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver (pid %d) did not exit within %s", pid, timeout)
}

func (e *Env) waitAPIServerReady(exited <-chan struct{}, timeout time.Duration) error {
	cfg := rest.CopyConfig(e.Config)
	cfg.Timeout = 2 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			return false, errors.New("kube-apiserver exited while starting")
		default:
		}
		_, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-apiserver to be ready again: %w", err)
	}
	return nil
}

// stopRestartedAPIServer stops the kube-apiserver RestartAPIServer started;
// envtest stops only the one it started itself.
func (e *Env) stopRestartedAPIServer() {
	if e.apiServer == nil {
		return
	}
	_ = e.apiServer.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.apiServerDone:
	case <-time.After(20 * time.Second):
		_ = e.apiServer.Process.Kill()
		<-e.apiServerDone
	}
}

func tail(data []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
