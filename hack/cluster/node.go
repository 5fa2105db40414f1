/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// containerdConfig: its own root, state and socket under DIR; the CRI plugin
// with runc (cgroupfs, as the kubelet), the bridge CNI config under DIR, and
// the local registry as localhost:PORT and as registry.k8s.io's mirror (the
// pause image).
const containerdConfig = `version = 2
root = "{{dir}}/containerd/root"
state = "{{dir}}/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "{{dir}}/containerd/containerd.sock"
[ttrpc]
  address = "{{dir}}/containerd/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # This machine refuses to lower a process's oom_score_adj (runc's init
  # then fails with "can't get final child's PID from pipe: EOF"): keep the
  # containers' no lower than containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "{{snapshotter}}"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{{runc}}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{{dir}}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."{{registry}}"]
    endpoint = ["http://{{registry}}"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."registry.k8s.io"]
    endpoint = ["http://{{registry}}"]
`

const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "teardown-e2e",
  "plugins": [{
    "type": "bridge", "bridge": "` + bridge + `", "isGateway": true, "ipMasq": true, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "{{dir}}/cni/ipam",
      "ranges": [[{"subnet": "` + podCIDR + `", "gateway": "` + podGateway + `"}]],
      "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
`

const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The machine has cgroup v1 (hybrid); kubelet 1.36 refuses it unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://{{dir}}/containerd/containerd.sock
address: {{nodeIP}}
port: {{port}}
healthzBindAddress: 127.0.0.1
healthzPort: {{healthzPort}}
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: {{dir}}/pki/ca.crt}
authorization:
  mode: Webhook
failSwapOn: false
resolvConf: /etc/resolv.conf
serializeImagePulls: false
# The disk is shared: evict only when it is really full.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podPidsLimit: -1
`

const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: {{dir}}/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: ` + podCIDR + `
hostnameOverride: {{node}}
healthzBindAddress: 127.0.0.1:{{healthzPort}}
metricsBindAddress: 127.0.0.1:{{metricsPort}}
# Leave the host's conntrack sysctls as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`

func (c *cluster) render(tmpl string, kv ...string) string {
	r := strings.NewReplacer(append([]string{"{{dir}}", c.dir, "{{registry}}", c.registry, "{{nodeIP}}", c.nodeIP, "{{node}}", c.nodeName}, kv...)...)
	return r.Replace(tmpl)
}

func (c *cluster) startNode(ctx context.Context) error {
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam", "kubelet"} {
		if err := os.MkdirAll(c.path(d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(c.path("cni/net.d/10-teardown-e2e.conflist"), []byte(c.render(cniConfig)), 0o644); err != nil {
		return err
	}
	snapshotter := "overlayfs"
	if !overlayWorks(c.path("containerd")) {
		c.logf("overlayfs does not mount here: containerd uses the native snapshotter")
		snapshotter = "native"
	}
	if err := os.WriteFile(c.path("containerd/config.toml"), []byte(c.render(containerdConfig,
		"{{snapshotter}}", snapshotter, "{{runc}}", c.opts.Runc)), 0o644); err != nil {
		return err
	}
	c.logf("starting containerd (%s)", snapshotter)
	var err error
	if c.containerd, err = c.spawn("containerd", "containerd", "--config", c.path("containerd/config.toml")); err != nil {
		return err
	}
	if err := c.waitFile(ctx, c.containerd, c.path("containerd/containerd.sock"), time.Minute); err != nil {
		return err
	}

	port, err := freePort(c.nodeIP)
	if err != nil {
		return err
	}
	healthz, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.path("kubelet.yaml"), []byte(c.render(kubeletConfig,
		"{{port}}", strconv.Itoa(port), "{{healthzPort}}", strconv.Itoa(healthz))), 0o644); err != nil {
		return err
	}
	c.logf("starting kubelet")
	if c.kubelet, err = c.spawn("kubelet", c.bin("kubelet"),
		"--config="+c.path("kubelet.yaml"), "--kubeconfig="+c.path("node.kubeconfig"),
		"--root-dir="+c.path("kubelet"), "--cert-dir="+c.path("kubelet/pki"),
		"--hostname-override="+c.nodeName, "--node-ip="+c.nodeIP, "--v=1"); err != nil {
		return err
	}

	healthz2, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	metrics, err := freePort("127.0.0.1")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.path("kube-proxy.yaml"), []byte(c.render(kubeProxyConfig,
		"{{healthzPort}}", strconv.Itoa(healthz2), "{{metricsPort}}", strconv.Itoa(metrics))), 0o644); err != nil {
		return err
	}
	c.logf("starting kube-proxy")
	if c.kubeProxy, err = c.spawn("kube-proxy", c.bin("kube-proxy"), "--config="+c.path("kube-proxy.yaml"), "--v=1"); err != nil {
		return err
	}

	c.logf("waiting for node %s to be Ready", c.nodeName)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, _ := c.kubectl(ctx, "get", "node", c.nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if strings.TrimSpace(out) == "True" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready within 3m (Ready=%q); see %s", c.nodeName, out, c.path("kubelet.log"))
		}
		select {
		case err := <-c.died:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	// Pods are admitted only once the default ServiceAccount exists.
	for {
		if _, err := c.kubectl(ctx, "get", "serviceaccount", "default", "-n", "default"); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no default ServiceAccount within 3m; see %s", c.path("kube-controller-manager.log"))
		}
		time.Sleep(time.Second)
	}
}

func (c *cluster) waitFile(ctx context.Context, p *proc, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not create %s within %s", p.name, path, timeout)
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited while starting: %v (log: %s)", p.name, p.err, c.path(p.name+".log"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
