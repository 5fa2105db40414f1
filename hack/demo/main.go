/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command demo is `make demo`: it starts a local control plane and the
// service-finalizer example controller, then narrates a Service declaring
// my.custom/finalizer being deleted, state by state; then it starts the
// teardown-controller and narrates a ClusterTeardownPolicy keeping an
// agent's RBAC until its pods are gone during an all-at-once uninstall. It
// keeps the cluster up for kubectl until Ctrl-C (or exits right away with
// --exit).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/examples/service-finalizer/controller"
	teardowncontroller "github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/demo"
	"github.com/teardown-dev/teardown/internal/testenv"
)

func main() {
	exit := flag.Bool("exit", false, "Stop right after the scenario instead of keeping the cluster up until Ctrl-C.")
	flag.Parse()
	if err := run(*exit); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func run(exit bool) (retErr error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := demo.NewOutput(os.Stdout)

	root, err := testenv.ModuleRoot()
	if err != nil {
		return err
	}
	manifestPath := filepath.Join("examples", "service-finalizer", "service.yaml")
	manifest, err := os.ReadFile(filepath.Join(root, manifestPath))
	if err != nil {
		return fmt.Errorf("reading the Service manifest: %w", err)
	}
	svc, err := controller.DecodeService(manifest)
	if err != nil {
		return err
	}
	svc.Namespace = "default"

	fmt.Fprintln(out, "==> Starting a local control plane: etcd, kube-apiserver, kube-controller-manager")
	env, err := testenv.Start(testenv.Options{
		Dir:               filepath.Join(root, "_out", "demo"),
		Log:               out.Prefixed("    "),
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	fmt.Fprintf(out, "    export KUBECONFIG=%s\n", env.Kubeconfig)

	fmt.Fprintf(out, "==> Starting the service-finalizer example controller (its log lines start with %q)\n", "controller |")
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out.Prefixed("    controller | "))))
	ctrlCtx, stopController := context.WithCancel(klog.NewContext(ctx, logger))
	dns := controller.NewFakeDNS(3 * time.Second)
	done := make(chan error, 1)
	go func() {
		done <- controller.RunWithConfig(ctrlCtx, env.Config, dns, controller.Options{RecheckAfter: time.Second}, 1)
	}()
	defer func() {
		stopController()
		if err := <-done; err != nil && retErr == nil {
			retErr = err
		}
	}()

	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a clientset: %w", err)
	}
	if err := controller.Walkthrough(ctx, cs, svc, dns, out); err != nil {
		return err
	}
	fmt.Fprintln(out, "==> Done: the Service stayed until its DNS record was deregistered, then went.")

	stopTeardown, err := startTeardownController(ctx, env, out)
	if err != nil {
		return err
	}
	defer func() {
		if err := stopTeardown(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	c, err := newClient(env)
	if err != nil {
		return err
	}
	if err := demo.OrderedUninstall(ctx, c, out, demo.DefaultUninstallOptions()); err != nil {
		return err
	}
	if exit {
		return nil
	}

	kubectl := "kubectl"
	if assets, err := testenv.AssetsDir(); err == nil {
		kubectl = filepath.Join(assets, "kubectl")
	}
	fmt.Fprintf(out, `==> The cluster and the controller keep running; try it yourself in another terminal:
    export KUBECONFIG=%[1]s
    %[2]s apply -f %[3]s
    %[2]s delete service web --wait=false
    %[2]s get service web -o yaml    # deletionTimestamp, finalizers, progress annotation
    %[2]s get events --field-selector reason=CleanupPending
    %[2]s get clusterteardownpolicies    # the teardown-controller keeps running too
    %[2]s get clusterteardownpolicy agent-rbac-last -o yaml
    Press Ctrl-C to stop.
`, env.Kubeconfig, kubectl, filepath.Join(root, manifestPath))
	<-ctx.Done()
	stop() // a second Ctrl-C kills at once
	fmt.Fprintln(out, "==> Stopping")
	return nil
}

// startTeardownController runs the teardown-controller in-process against
// env. Its full log goes to a file beside the control plane's; its errors
// also to out. The returned function stops it.
func startTeardownController(ctx context.Context, env *testenv.Env, out *demo.Output) (stop func() error, err error) {
	logPath := filepath.Join(env.Dir, "teardown-controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the teardown-controller's log: %w", err)
	}
	fmt.Fprintf(out, "==> Starting the teardown-controller in-process (log: %s; errors also here, after %q)\n", logPath, "teardown-controller |")
	// Errors while it stops (requests cut short) are no news: only the file
	// gets them.
	var stopping atomic.Bool
	console := out.Prefixed("    teardown-controller | ")
	errs := io.Writer(writerFunc(func(p []byte) (int, error) {
		if stopping.Load() {
			return len(p), nil
		}
		return console.Write(p)
	}))
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2),
		textlogger.Output(demo.KlogErrors(logFile, errs))))
	// controller-runtime logs some things through its global logger.
	ctrl.SetLogger(logger)
	ctx, cancel := context.WithCancel(ctx)
	wait, err := demo.StartController(ctx, env.Config, logger)
	if err != nil {
		cancel()
		logFile.Close()
		return nil, err
	}
	return func() error {
		stopping.Store(true)
		cancel()
		err := wait()
		logFile.Close()
		if err != nil {
			return fmt.Errorf("teardown-controller: %w", err)
		}
		return nil
	}, nil
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func newClient(env *testenv.Env) (client.WithWatch, error) {
	scheme, err := teardowncontroller.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return c, nil
}
