/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command demo is `make demo`: it starts a local control plane and the
// service-finalizer example controller, then narrates a Service declaring
// my.custom/finalizer being deleted, state by state, and keeps the cluster up
// for kubectl until Ctrl-C (or exits right away with --exit).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/teardown-dev/teardown/examples/service-finalizer/controller"
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
	out := &lineWriter{w: os.Stdout}

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
	env, err := testenv.Start(testenv.Options{Dir: filepath.Join(root, "_out", "demo"), Log: out.prefixed("    ")})
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
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out.prefixed("    controller | "))))
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
    Press Ctrl-C to stop.
`, env.Kubeconfig, kubectl, filepath.Join(root, manifestPath))
	<-ctx.Done()
	stop() // a second Ctrl-C kills at once
	fmt.Fprintln(out, "==> Stopping")
	return nil
}

// lineWriter serializes whole lines from the narration, the control plane
// and the controller's log onto one output.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// prefixed returns a writer that starts every line with prefix.
func (l *lineWriter) prefixed(prefix string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		var b bytes.Buffer
		for line := range bytes.Lines(p) {
			b.WriteString(prefix)
			b.Write(line)
		}
		if _, err := l.Write(b.Bytes()); err != nil {
			return 0, err
		}
		return len(p), nil
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
