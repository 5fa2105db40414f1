/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package testenv starts a real local control plane, etcd, kube-apiserver and
// kube-controller-manager (garbage collector and namespace controllers), for
// tests and demos. The binaries come from `make control-plane` (bin/k8s) or
// KUBEBUILDER_ASSETS.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// DefaultControllers are the kube-controller-manager controllers the
// finalizer semantics depend on, and the one that fills the aggregated
// ClusterRoles (admin, edit, view) that tests grant ServiceAccounts.
var DefaultControllers = []string{"garbagecollector", "namespace", "clusterrole-aggregation"}

// Options configure Start.
type Options struct {
	// Examples names the package's Examples that need the control plane:
	// an Example cannot skip itself, so in the unit tier Main leaves them
	// out (-test.skip).
	Examples []string
	// TeardownCRDs installs Teardown's own CRDs (config/crd/bases of the
	// module root) once the API server is up.
	TeardownCRDs bool
	// CRDDirectoryPaths are installed once the API server is up, too.
	CRDDirectoryPaths []string
	// Controllers run in kube-controller-manager; DefaultControllers if empty.
	Controllers []string
	// Dir keeps the kubeconfig and logs; a temporary folder if empty.
	Dir string
	// Log receives progress lines; nothing if nil.
	Log io.Writer
	// ControllerManagerArgs are appended to kube-controller-manager's
	// arguments and override the defaults (the last of a flag wins), e.g.
	// LeaderElection(4*time.Second) to run it with a Lease.
	ControllerManagerArgs []string
	// APIServerFeatureGates are passed to kube-apiserver's --feature-gates
	// (e.g. "AllowUnsafeMalformedObjectDeletion=true").
	APIServerFeatureGates []string
	// APIServerArgs and EtcdArgs set flags of kube-apiserver and etcd
	// (name without dashes: value), e.g. max-requests-inflight or
	// quota-backend-bytes for the scale benchmark (bench/cmd/scale).
	APIServerArgs, EtcdArgs map[string]string
}

// LeaderElection returns kube-controller-manager arguments that turn leader
// election on (it is off by default here, so there is no Lease) with a
// lease of d: it then holds and renews Lease
// kube-system/kube-controller-manager, and a stopped one leaves it behind,
// not renewed, as in a cluster. The renew deadline is 3/4 of d and the
// retry period 1/4.
func LeaderElection(d time.Duration) []string {
	return []string{
		"--leader-elect=true",
		"--leader-elect-lease-duration=" + d.String(),
		"--leader-elect-renew-deadline=" + (d * 3 / 4).String(),
		"--leader-elect-retry-period=" + (d / 4).String(),
	}
}

// Env is a running control plane.
type Env struct {
	// Config is an admin rest.Config for the API server.
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig file, for kubectl.
	Kubeconfig string
	// Dir holds the kubeconfig and kube-controller-manager's log.
	Dir string

	env        *envtest.Environment
	beforeStop []func()
	kcm        *exec.Cmd
	kcmDone    chan error
	tempDir    bool
	// apiServer is the kube-apiserver RestartAPIServer started, if any.
	apiServer     *exec.Cmd
	apiServerDone chan struct{}
}

// Start starts etcd, kube-apiserver and kube-controller-manager, and returns
// once the garbage collector, when it is among the controllers, acts on
// deletions. Call Stop when done, whatever
// happens.
func Start(opts Options) (_ *Env, retErr error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: opts.Dir}
	if e.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "teardown-testenv-"); err != nil {
			return nil, fmt.Errorf("creating a work folder: %w", err)
		}
		e.tempDir = true
	} else if err := os.MkdirAll(e.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", e.Dir, err)
	}
	defer func() {
		if retErr != nil {
			_ = e.Stop()
		}
	}()
	crds := slices.Clone(opts.CRDDirectoryPaths)
	if opts.TeardownCRDs {
		root, err := ModuleRoot()
		if err != nil {
			return nil, err
		}
		crds = append(crds, filepath.Join(root, "config", "crd", "bases"))
	}
	logf(opts.Log, "starting etcd and kube-apiserver from %s", assets)
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
	}
	if len(opts.APIServerFeatureGates) > 0 {
		e.env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", strings.Join(opts.APIServerFeatureGates, ","))
	}
	for name, value := range opts.APIServerArgs {
		e.env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	if len(opts.EtcdArgs) > 0 {
		e.env.ControlPlane.Etcd = &envtest.Etcd{}
		for name, value := range opts.EtcdArgs {
			e.env.ControlPlane.Etcd.Configure().Set(name, value)
		}
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	admin, err := e.env.AddUser(envtest.User{Name: "teardown-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating an admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	controllers := opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	logf(opts.Log, "starting kube-controller-manager (%s)", strings.Join(controllers, ","))
	if err := e.startControllerManager(assets, controllers, opts.ControllerManagerArgs); err != nil {
		return nil, err
	}
	if slices.Contains(controllers, "garbagecollector") {
		if err := e.waitForGarbageCollector(); err != nil {
			return nil, err
		}
	}
	logf(opts.Log, "control plane ready at %s", e.Config.Host)
	return e, nil
}

func (e *Env) startControllerManager(assets string, controllers, extra []string) error {
	logFile, err := os.Create(filepath.Join(e.Dir, "kube-controller-manager.log"))
	if err != nil {
		return fmt.Errorf("creating the kube-controller-manager log: %w", err)
	}
	args := []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--concurrent-gc-syncs=20",
		"--v=1",
	}
	e.kcm = exec.Command(filepath.Join(assets, "kube-controller-manager"), append(args, extra...)...)
	e.kcm.Stdout, e.kcm.Stderr = logFile, logFile
	// Die with the test binary even if it is killed before Stop runs.
	e.kcm.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := e.kcm.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	e.kcmDone = make(chan error, 1)
	go func() {
		e.kcmDone <- e.kcm.Wait()
		logFile.Close()
	}()
	return nil
}

// waitForGarbageCollector proves the garbage collector is running by deleting
// an owner and waiting for its dependent to be collected.
func (e *Env) waitForGarbageCollector() error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := client.New(e.Config, client.Options{})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "testenv-gc-probe-owner", Namespace: "default"}}
	if err := c.Create(ctx, owner); err != nil {
		return fmt.Errorf("creating the garbage collector probe: %w", err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "testenv-gc-probe-dependent", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
	}}
	if err := c.Create(ctx, dependent); err != nil {
		return fmt.Errorf("creating the garbage collector probe: %w", err)
	}
	if err := c.Delete(ctx, owner); err != nil {
		return fmt.Errorf("deleting the garbage collector probe: %w", err)
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-e.kcmDone:
			return false, fmt.Errorf("kube-controller-manager exited: %w\n%s", err, e.controllerManagerLogTail())
		default:
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(dependent), &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the garbage collector: %w\n%s", err, e.controllerManagerLogTail())
	}
	return nil
}

func (e *Env) controllerManagerLogTail() string {
	data, _ := os.ReadFile(filepath.Join(e.Dir, "kube-controller-manager.log"))
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// StopControllerManager stops kube-controller-manager (SIGTERM, SIGKILL
// after ten seconds) and waits for it to exit, as when its pod goes away:
// etcd and kube-apiserver keep running, and nothing of kube-controller-
// manager acts any more. A Lease it held stays behind, no longer renewed.
// Stop copes with it being stopped already.
func (e *Env) StopControllerManager() error {
	if e.kcm == nil || e.kcm.Process == nil {
		return errors.New("kube-controller-manager is not running")
	}
	_ = terminate(e.kcm.Process, e.kcmDone, 10*time.Second) // told to stop: how it exits says nothing
	e.kcm = nil
	return nil
}

// EtcdEndpoint is the client URL of the control plane's etcd, for tests
// that must write to storage behind the API server's back (a corrupt
// object). kube-apiserver keeps its objects under /registry.
func (e *Env) EtcdEndpoint() string {
	return e.env.ControlPlane.Etcd.URL.String()
}

// AddUser provisions a user (a client certificate) with the given groups and
// returns a rest.Config that authenticates as it. It has no permissions
// until RBAC grants some.
func (e *Env) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return u.Config(), nil
}

// PollingConfig is a copy of Config for tests that poll the API every few
// milliseconds: client-go's default 5 QPS would make every wait a wait on
// its rate limiter.
func (e *Env) PollingConfig() *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

// StartManager runs mgr in the background until Stop, which stops it first
// and waits for it, so its watches are closed before the control plane goes.
func (e *Env) StartManager(mgr manager.Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(ctx); err != nil {
			panic(fmt.Sprintf("manager stopped: %v", err))
		}
	}()
	e.BeforeStop(func() { cancel(); <-stopped })
}

// BeforeStop registers fn to run when Stop begins, before the control plane
// goes: stop clients and managers there, so their open watches do not hold
// up kube-apiserver's shutdown.
func (e *Env) BeforeStop(fn func()) { e.beforeStop = append(e.beforeStop, fn) }

// Stop stops everything Start started and removes a temporary work folder.
func (e *Env) Stop() error {
	for i := len(e.beforeStop) - 1; i >= 0; i-- {
		e.beforeStop[i]()
	}
	var errs []error
	if e.kcm != nil && e.kcm.Process != nil {
		_ = terminate(e.kcm.Process, e.kcmDone, 10*time.Second)
	}
	e.stopRestartedAPIServer()
	if e.env != nil {
		if err := e.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping etcd and kube-apiserver: %w", err))
		}
	}
	if e.tempDir {
		_ = os.RemoveAll(e.Dir)
	}
	return errors.Join(errs...)
}

// AssetsDir finds the control-plane binaries: KUBEBUILDER_ASSETS, or bin/k8s
// in the module root above the working directory.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "k8s")
	if _, err := os.Stat(filepath.Join(dir, "kube-controller-manager")); err != nil {
		return "", fmt.Errorf("control-plane binaries not found in %s: run `make control-plane` (or set KUBEBUILDER_ASSETS): %w", dir, err)
	}
	return dir, nil
}

// ModuleRoot returns the folder of the main module's go.mod above the working
// directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(data, []byte("module github.com/teardown-dev/teardown\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the teardown module")
		}
		dir = parent
	}
}

// terminate sends p SIGTERM, then SIGKILL after grace, and returns how it
// exited (done receives its Wait).
func terminate(p *os.Process, done <-chan error, grace time.Duration) error {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
		_ = p.Kill()
		return <-done
	}
}

// Main is a TestMain body: it starts one control plane for the package's
// tests, hands it to use, runs the tests and always stops it. In the unit
// tier (go test -short, make test-unit) it starts nothing, never calls use,
// and runs the tests: those that need no control plane (unit tests,
// Examples, fuzz seeds) run, and each integration test skips itself with
// SkipShort before it reads what use sets.
func Main(m *testing.M, opts Options, use func(*Env)) {
	os.Exit(run(m, opts, use))
}

// Short reports a unit-tier run. It parses the test flags, so a TestMain
// may call it before m.Run.
func Short() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	return testing.Short()
}

// SkipShort skips a test that starts its own control plane in the unit
// tier.
func SkipShort(t testing.TB) {
	t.Helper()
	if Short() {
		t.Skip("needs a control plane: not in the unit tier (-short)")
	}
}

func run(m *testing.M, opts Options, use func(*Env)) int {
	if Short() {
		if len(opts.Examples) > 0 {
			skip := "^(" + strings.Join(opts.Examples, "|") + ")$"
			if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
				skip = prev + "|" + skip
			}
			if err := flag.Set("test.skip", skip); err != nil {
				fmt.Fprintf(os.Stderr, "skipping the Examples that need a control plane: %v\n", err)
				return 1
			}
		}
		return m.Run()
	}
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		}
	}()
	use(e)
	return m.Run()
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
