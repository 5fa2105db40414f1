/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package procctl runs the teardown-controller as a separate OS process
// against a test control plane, so that tests can kill it (SIGKILL), stop it
// (SIGTERM), restart it and run several replicas with leader election, as
// happens to a Deployment in a cluster.
package procctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// BinaryEnv names an environment variable that, when set, is the path of a
// teardown-controller binary to run instead of building ./cmd/teardown-controller,
// for example one built from another commit.
const BinaryEnv = "TEARDOWN_CONTROLLER_BIN"

// LeaseAcquired is what client-go's leader election logs when a replica
// becomes the leader (compared without case: its capitalisation changed
// across client-go versions).
const LeaseAcquired = "successfully acquired lease"

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Build builds ./cmd/teardown-controller of the module once per test binary,
// into dir, and returns the binary's path; BinaryEnv overrides it.
func Build(dir string) (string, error) {
	buildOnce.Do(func() {
		if bin := os.Getenv(BinaryEnv); bin != "" {
			buildPath = bin
			return
		}
		root, err := testenv.ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "teardown-controller")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/teardown-controller")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building ./cmd/teardown-controller: %w\n%s", err, out)
		}
	})
	return buildPath, buildErr
}

// BuildAt builds ./cmd/teardown-controller as it was at commit (any name
// git understands) of the module's own history, into dir, and returns the
// binary's path: a detached git worktree of that commit, built, then
// removed. It fails when the history does not hold the commit (a shallow
// clone: git fetch --unshallow).
func BuildAt(commit, dir string) (string, error) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	run := func(dir string, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run(root, "git", "worktree", "add", "--detach", src, commit); err != nil {
		return "", fmt.Errorf("checking out commit %s of the module's history: %w", commit, err)
	}
	defer func() { _ = run(root, "git", "worktree", "remove", "--force", src) }()
	bin, err := filepath.Abs(filepath.Join(dir, "teardown-controller-"+commit))
	if err != nil {
		return "", err
	}
	if err := run(src, "go", "build", "-o", bin, "./cmd/teardown-controller"); err != nil {
		return "", fmt.Errorf("building commit %s: %w", commit, err)
	}
	return bin, nil
}

// WriteKubeconfig writes a kubeconfig file that authenticates as cfg does
// (client certificate, token or basic auth).
func WriteKubeconfig(cfg *rest.Config, path string) error {
	cluster := &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	user := &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientCertificate:     cfg.CertFile,
		ClientKeyData:         cfg.KeyData,
		ClientKey:             cfg.KeyFile,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
	}
	if cfg.Impersonate.UserName != "" {
		user.Impersonate = cfg.Impersonate.UserName
		user.ImpersonateGroups = cfg.Impersonate.Groups
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = cluster
	kc.AuthInfos["test"] = user
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

var (
	flagsMu    sync.Mutex
	flagsCache = map[string]map[string]bool{}
)

// knownFlags lists the flags bin's -h output names; nil if it cannot tell.
func knownFlags(bin string) map[string]bool {
	flagsMu.Lock()
	defer flagsMu.Unlock()
	if f, ok := flagsCache[bin]; ok {
		return f
	}
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	var known map[string]bool
	for _, m := range regexp.MustCompile(`(?m)^\s+-{1,2}([a-zA-Z0-9][-a-zA-Z0-9_.]*)`).FindAllSubmatch(out, -1) {
		if known == nil {
			known = map[string]bool{}
		}
		known[string(m[1])] = true
	}
	flagsCache[bin] = known
	return known
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Options configure a Controller.
type Options struct {
	// Name tells replicas apart in log file names and messages.
	Name string
	// Dir holds the binary (when built), the kubeconfig and the log.
	Dir string
	// Config is the identity and API server the controller uses.
	Config *rest.Config
	// LeaderElectionNamespace, when set, runs the controller with
	// --leader-elect and its Lease in this namespace.
	LeaderElectionNamespace string
	// Args are more flags, such as --target-workers=8.
	Args []string
	// Binary, when set, is the teardown-controller to run instead of the
	// one Build gives (BuildAt builds one from another commit).
	Binary string
	// IfSupported are more flags, each passed only if the binary knows it
	// (it may be built from another commit), such as
	// --webhook-allowed-cidrs=127.0.0.0/8.
	IfSupported []string
}

// Controller is a teardown-controller process that can be started, killed
// and restarted. Its methods are safe for concurrent use.
type Controller struct {
	name    string
	bin     string
	args    []string
	logPath string

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	logStart int64 // offset of the current run in the log
	starts   int
	kills    int
}

// New prepares a controller process (building the binary if needed); Start
// runs it.
func New(opts Options) (*Controller, error) {
	if opts.Name == "" {
		opts.Name = "teardown-controller"
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = Build(opts.Dir); err != nil {
			return nil, err
		}
	}
	kubeconfig := filepath.Join(opts.Dir, opts.Name+".kubeconfig")
	if err := WriteKubeconfig(opts.Config, kubeconfig); err != nil {
		return nil, err
	}
	webhookPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	var args []string
	// Only the flags this binary knows: it may be built from another commit.
	known := knownFlags(bin)
	for _, a := range append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--webhook-port=" + strconv.Itoa(webhookPort),
	}, opts.IfSupported...) {
		name := strings.TrimPrefix(strings.SplitN(a, "=", 2)[0], "--")
		if known == nil || known[name] {
			args = append(args, a)
		}
	}
	if opts.LeaderElectionNamespace != "" {
		args = append(args, "--leader-elect", "--leader-election-namespace="+opts.LeaderElectionNamespace)
	}
	args = append(args, opts.Args...)
	return &Controller{
		name:    opts.Name,
		bin:     bin,
		args:    args,
		logPath: filepath.Join(opts.Dir, opts.Name+".log"),
	}, nil
}

// Name is the replica's name.
func (c *Controller) Name() string { return c.name }

// LogPath is the file that collects the output of every run.
func (c *Controller) LogPath() string { return c.logPath }

// Start runs the controller; it is an error if it already runs.
func (c *Controller) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startLocked()
}

func (c *Controller) startLocked() error {
	if c.runningLocked() {
		return fmt.Errorf("%s already runs (pid %d)", c.name, c.cmd.Process.Pid)
	}
	logFile, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %w", c.logPath, err)
	}
	c.starts++
	fmt.Fprintf(logFile, "=== procctl: start %d of %s at %s ===\n", c.starts, c.name, time.Now().Format(time.RFC3339Nano))
	if st, err := logFile.Stat(); err == nil {
		c.logStart = st.Size()
	}
	cmd := exec.Command(c.bin, c.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Die with the test binary even if it is killed before Stop runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", c.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	c.cmd, c.done = cmd, done
	return nil
}

// Running says whether the process runs.
func (c *Controller) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runningLocked()
}

func (c *Controller) runningLocked() bool {
	if c.cmd == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Pid is the process id of the current run, 0 if none ever started.
func (c *Controller) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Kill kills the process with SIGKILL, as the kubelet does after the grace
// period or the kernel on OOM, and waits until it is gone. Killing a
// stopped controller does nothing.
func (c *Controller) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killLocked()
}

func (c *Controller) killLocked() error {
	if !c.runningLocked() {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s: %w", c.name, err)
	}
	<-c.done
	c.kills++
	return nil
}

// Stop sends SIGTERM, as a rolling update does, and waits for the process
// to exit; after grace it is killed.
func (c *Controller) Stop(grace time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.runningLocked() {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", c.name, err)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
		return c.killLocked()
	}
}

// Pause stops the process with SIGSTOP, as a long GC pause, a frozen VM or
// a partition does: it keeps its memory, and resumes (Resume) believing
// what it believed before.
func (c *Controller) Pause() error { return c.signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (c *Controller) Resume() error { return c.signal(syscall.SIGCONT) }

func (c *Controller) signal(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.runningLocked() {
		return fmt.Errorf("%s does not run", c.name)
	}
	if err := c.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("sending %s to %s: %w", sig, c.name, err)
	}
	return nil
}

// Restart kills the process with SIGKILL and starts it again.
func (c *Controller) Restart() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.killLocked(); err != nil {
		return err
	}
	return c.startLocked()
}

// Kills is how many times Kill or Restart killed a running process.
func (c *Controller) Kills() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kills
}

// Starts is how many times the process was started.
func (c *Controller) Starts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts
}

// currentLog is the output of the current (or last) run.
func (c *Controller) currentLog() []byte {
	c.mu.Lock()
	start := c.logStart
	c.mu.Unlock()
	data, err := os.ReadFile(c.logPath)
	if err != nil || int64(len(data)) < start {
		return nil
	}
	return data[start:]
}

// IsLeader says whether the current run has acquired the leader-election
// Lease (and is still running).
func (c *Controller) IsLeader() bool {
	return c.Running() && bytes.Contains(bytes.ToLower(c.currentLog()), []byte(LeaseAcquired))
}

// LogContains says whether the current run's output contains s.
func (c *Controller) LogContains(s string) bool {
	return bytes.Contains(c.currentLog(), []byte(s))
}

// LogTail returns the last n lines of the log, across runs, for failure
// messages.
func (c *Controller) LogTail(n int) string {
	data, _ := os.ReadFile(c.logPath)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- last %d lines of %s ---\n%s", len(lines), c.logPath, bytes.Join(lines, []byte("\n")))
}

// Grep returns the lines of the whole log (every run) that contain s, at
// most max of them (the last ones).
func (c *Controller) Grep(s string, max int) []string {
	data, _ := os.ReadFile(c.logPath)
	var out []string
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(l, []byte(s)) {
			out = append(out, string(l))
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// WaitLeader waits until one of the replicas is the leader and returns it.
func WaitLeader(ctx context.Context, timeout time.Duration, replicas ...*Controller) (*Controller, error) {
	var leader *Controller
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, r := range replicas {
			if r.IsLeader() {
				leader = r
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("no replica became the leader within %s", timeout)
	}
	return leader, nil
}
