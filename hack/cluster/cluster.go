/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const (
	// serviceCIDR's first address is the kubernetes Service's ClusterIP.
	serviceCIDR = "10.0.0.0/24"
	podCIDR     = "10.244.0.0/16"
	podGateway  = "10.244.0.1"
	// bridge is the CNI bridge's name: not cni0, so that it never takes
	// another runtime's.
	bridge   = "tdcni0"
	nodeName = "teardown-e2e"
)

type cluster struct {
	opts options
	dir  string
	log  io.Writer
	pki  *pki

	nodeIP, nodeName, kubeconfig, registry string
	apiServerURL                           string

	procs        []*proc
	died         chan error
	containerd   *proc
	kubelet      *proc
	kubeProxy    *proc
	reg          *http.Server
	undo         []func() // sysctls to restore, in reverse
	netnsAtStart map[string]bool
	// runContainerdAtStart: /run/containerd (the shims' sockets) was there
	// before; if not, stop removes it.
	runContainerdAtStart bool
	// netnsDirAtStart: /var/run/netns was there before; if not, stop
	// removes it (when empty).
	netnsDirAtStart bool
}

func (c *cluster) path(parts ...string) string {
	return filepath.Join(append([]string{c.dir}, parts...)...)
}
func (c *cluster) bin(name string) string { return filepath.Join(c.opts.Bin, name) }

func (c *cluster) start(ctx context.Context) error {
	c.died = make(chan error, 1)
	c.nodeName = nodeName
	var err error
	if c.nodeIP, err = nodeIP(); err != nil {
		return err
	}
	c.netnsAtStart = listNetns()
	if _, err := os.Stat("/run/containerd"); err == nil {
		c.runContainerdAtStart = true
	}
	if _, err := os.Stat("/var/run/netns"); err == nil {
		c.netnsDirAtStart = true
	}
	for _, bin := range []string{"containerd", "runc", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s is not installed (hack/node.sh installs it with apt-get)", bin)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return fmt.Errorf("the CNI plugins are not installed (hack/node.sh installs containernetworking-plugins)")
	}
	for _, sysctl := range []string{"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables"} {
		if err := c.setSysctl(sysctl, "1"); err != nil {
			return err
		}
	}

	c.logf("building and serving the images (registry on localhost)")
	if err := c.startRegistry(ctx); err != nil {
		return err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return err
	}
	return c.startNode(ctx)
}

func (c *cluster) startControlPlane(ctx context.Context) error {
	var err error
	if c.pki, err = newPKI(c.path("pki")); err != nil {
		return err
	}
	p := c.pki
	for _, cert := range []struct {
		name, cn string
		groups   []string
	}{
		{"admin", "teardown-admin", []string{"system:masters"}},
		{"node", "system:node:" + c.nodeName, []string{"system:nodes"}},
		{"kube-controller-manager", "system:kube-controller-manager", nil},
		{"kube-scheduler", "system:kube-scheduler", nil},
		{"kube-proxy", "system:kube-proxy", nil},
	} {
		if err := p.issue(cert.name, cert.cn, cert.groups); err != nil {
			return err
		}
	}
	if err := p.issue("apiserver", "kube-apiserver", nil, c.nodeIP, "127.0.0.1", "10.0.0.1", "localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"); err != nil {
		return err
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}

	etcdPort, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	peerPort, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	c.logf("starting etcd")
	etcd, err := c.spawn("etcd", c.bin("etcd"), "--data-dir="+c.path("etcd"), "--name=default",
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync=true", "--log-level=warn")
	if err != nil {
		return err
	}
	if err := waitHTTPS(ctx, etcd, etcdURL+"/health", nil, time.Minute); err != nil {
		return err
	}

	apiPort, err := freePort(c.nodeIP)
	if err != nil {
		return err
	}
	c.apiServerURL = fmt.Sprintf("https://%s", net.JoinHostPort(c.nodeIP, strconv.Itoa(apiPort)))
	c.logf("starting kube-apiserver at %s", c.apiServerURL)
	api, err := c.spawn("kube-apiserver", c.bin("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address="+c.nodeIP, "--advertise-address="+c.nodeIP, "--secure-port="+strconv.Itoa(apiPort),
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.path("sa.key"), "--service-account-signing-key-file="+p.path("sa.key"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate="+p.path("admin.crt"), "--kubelet-client-key="+p.path("admin.key"),
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true", "--profiling=false", "--v=1")
	if err != nil {
		return err
	}
	adminCert, err := tls.LoadX509KeyPair(p.path("admin.crt"), p.path("admin.key"))
	if err != nil {
		return err
	}
	if err := waitHTTPS(ctx, api, c.apiServerURL+"/readyz", &adminCert, 2*time.Minute); err != nil {
		return err
	}
	c.kubeconfig = c.path("kubeconfig")
	for _, name := range []string{"admin", "node", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		path := c.path(name + ".kubeconfig")
		if name == "admin" {
			path = c.kubeconfig
		}
		if err := p.kubeconfig(path, c.apiServerURL, name); err != nil {
			return err
		}
	}

	c.logf("starting kube-controller-manager and kube-scheduler")
	if _, err := c.spawn("kube-controller-manager", c.bin("kube-controller-manager"),
		"--kubeconfig="+c.path("kube-controller-manager.kubeconfig"),
		"--authentication-kubeconfig="+c.path("kube-controller-manager.kubeconfig"),
		"--authorization-kubeconfig="+c.path("kube-controller-manager.kubeconfig"),
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+p.path("sa.key"), "--root-ca-file="+p.path("ca.crt"),
		"--cluster-signing-cert-file="+p.path("ca.crt"), "--cluster-signing-key-file="+p.path("ca.key"),
		"--leader-elect=false", "--secure-port=0", "--v=1"); err != nil {
		return err
	}
	schedPort, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	if _, err := c.spawn("kube-scheduler", c.bin("kube-scheduler"),
		"--kubeconfig="+c.path("kube-scheduler.kubeconfig"),
		"--authentication-kubeconfig="+c.path("kube-scheduler.kubeconfig"),
		"--authorization-kubeconfig="+c.path("kube-scheduler.kubeconfig"),
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(schedPort), "--v=1"); err != nil {
		return err
	}
	return nil
}

// kubectl runs kubectl as the admin and returns its output.
func (c *cluster) kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.bin("kubectl"), append([]string{"--kubeconfig=" + c.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// setSysctl sets /proc/sys/NAME to value, and restores it at stop.
func (c *cluster) setSysctl(name, value string) error {
	path := filepath.Join("/proc/sys", name)
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if strings.TrimSpace(string(old)) == value {
		return nil
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("setting %s: %w", path, err)
	}
	c.undo = append(c.undo, func() { _ = os.WriteFile(path, old, 0o644) })
	return nil
}
