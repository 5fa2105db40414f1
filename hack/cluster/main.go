/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command cluster runs a real one-node Kubernetes cluster on this machine,
// from the binaries hack/control-plane.sh and hack/node.sh build and Debian's
// containerd, runc and CNI plugins: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd, kubelet, kube-proxy,
// a bridge CNI, and an image registry on localhost that also stands in for
// registry.k8s.io (the pause image). It runs until SIGINT or SIGTERM, then
// stops everything and removes what it made: pods, mounts, network
// namespaces, cgroups, iptables rules, the bridge, its folder.
//
// It writes DIR/env (KUBECONFIG=..., REGISTRY=...) once the node is Ready,
// for `make e2e` and for a person (docs/local-cluster.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.Dir, "dir", "", "work folder (removed at the end); a temporary one if empty")
	flag.StringVar(&o.Repo, "repo", "", "root of the main module (default: two folders up from here)")
	flag.StringVar(&o.Bin, "bin", "", "folder with the Kubernetes binaries (default: REPO/bin/k8s)")
	flag.StringVar(&o.ControllerImage, "controller-image", "", "OCI layout of the teardown-controller image to push as REGISTRY/teardown-controller (default: REPO/bin/image/teardown-controller, if there)")
	flag.StringVar(&o.Runc, "runc", "runc", "the OCI runtime containerd runs (a wrapper adding --debug helps when a container does not start)")
	flag.StringVar(&o.Logs, "logs", "", "copy every process's log here at the end")
	flag.BoolVar(&o.Keep, "keep", false, "leave the work folder (logs) in place at the end")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	Dir, Repo, Bin, ControllerImage, Runc, Logs string
	Keep                                        bool
}

func run(o options) (retErr error) {
	if os.Geteuid() != 0 {
		return fmt.Errorf("a node needs root (kubelet, containerd, iptables, mounts); run as root")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Repo == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		o.Repo = filepath.Dir(filepath.Dir(wd))
	}
	if o.Bin == "" {
		o.Bin = filepath.Join(o.Repo, "bin", "k8s")
	}
	if o.ControllerImage == "" {
		o.ControllerImage = filepath.Join(o.Repo, "bin", "image", "teardown-controller")
	}
	tempDir := o.Dir == ""
	if tempDir {
		d, err := os.MkdirTemp("", "teardown-node-")
		if err != nil {
			return err
		}
		o.Dir = d
	}
	o.Dir, _ = filepath.Abs(o.Dir)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	c := &cluster{opts: o, dir: o.Dir, log: os.Stderr}
	start := time.Now()
	defer func() {
		c.logf("stopping the cluster")
		if err := c.stop(); err != nil && retErr == nil {
			retErr = err
		}
		if o.Logs != "" {
			if err := copyLogs(o.Dir, o.Logs); err != nil && retErr == nil {
				retErr = err
			}
		}
		if !o.Keep {
			if err := os.RemoveAll(o.Dir); err != nil && retErr == nil {
				retErr = fmt.Errorf("removing %s: %w", o.Dir, err)
			}
		} else {
			c.logf("logs kept in %s", o.Dir)
		}
	}()
	if err := c.start(ctx); err != nil {
		return err
	}
	env := fmt.Sprintf("KUBECONFIG=%s\nREGISTRY=%s\nNODE=%s\nDIR=%s\n", c.kubeconfig, c.registry, c.nodeName, c.dir)
	if err := os.WriteFile(filepath.Join(c.dir, "env.tmp"), []byte(env), 0o644); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(c.dir, "env.tmp"), filepath.Join(c.dir, "env")); err != nil {
		return err
	}
	c.logf("cluster ready in %s", time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("export %s", strings.ReplaceAll(strings.TrimSpace(env), "\n", "\nexport "))
	fmt.Println()
	c.logf("logs: %s; press Ctrl-C to stop", c.dir)
	select {
	case <-ctx.Done():
	case err := <-c.died:
		return err
	}
	stop()
	return nil
}

func (c *cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "%s cluster: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// copyLogs copies dir's *.log files to logs.
func copyLogs(dir, logs string) error {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(logs, filepath.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
