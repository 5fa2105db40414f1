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
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stop takes everything down in the order that leaves nothing behind: the
// kubelet first (so that it starts nothing again), every pod sandbox through
// the CRI (which runs the CNI DEL, removing the pods' network namespaces,
// addresses and masquerade rules), kube-proxy and its rules, containerd and
// its shims, the control plane; then what a crash could still have left:
// mounts under DIR, pod cgroups, network namespaces, the bridge, sysctls.
func (c *cluster) stop() error {
	var errs []error
	if c.kubelet != nil {
		c.kubelet.stop(30 * time.Second)
	}
	if c.containerd != nil {
		if err := c.removeSandboxes(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.kubeProxy != nil {
		c.kubeProxy.stop(10 * time.Second)
		if out, err := exec.Command(c.bin("kube-proxy"), "--cleanup", "--v=0").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("kube-proxy --cleanup: %w\n%s", err, out))
		}
	}
	if c.containerd != nil {
		c.containerd.stop(20 * time.Second)
		c.killShims()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(20 * time.Second)
	}
	if c.reg != nil {
		_ = c.reg.Close()
	}
	if err := c.unmountAll(); err != nil {
		errs = append(errs, err)
	}
	if err := removePodCgroups(); err != nil {
		errs = append(errs, err)
	}
	c.removeNetns()
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		if out, err := exec.Command("ip", "link", "delete", bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting the bridge %s: %w\n%s", bridge, err, out))
		}
	}
	removeKubeletChains()
	removeCNIChains()
	if !c.netnsDirAtStart {
		_ = os.Remove("/var/run/netns") // only if empty
	}
	if !c.runContainerdAtStart {
		_ = os.RemoveAll("/run/containerd")
	}
	for i := len(c.undo) - 1; i >= 0; i-- {
		c.undo[i]()
	}
	return errors.Join(errs...)
}

// removeKubeletChains removes the iptables chains the kubelet makes (it
// has no --cleanup; kube-proxy's removes only its own).
func removeKubeletChains() {
	for _, ipt := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(ipt); err != nil {
			continue
		}
		run := func(args ...string) { _ = exec.Command(ipt, append([]string{"-w"}, args...)...).Run() }
		for _, hook := range []string{"INPUT", "OUTPUT"} {
			run("-t", "filter", "-D", hook, "-j", "KUBE-FIREWALL")
		}
		run("-t", "filter", "-F", "KUBE-FIREWALL")
		run("-t", "filter", "-X", "KUBE-FIREWALL")
		for _, table := range []string{"mangle", "nat", "filter"} {
			run("-t", table, "-F", "KUBE-KUBELET-CANARY")
			run("-t", table, "-X", "KUBE-KUBELET-CANARY")
		}
		run("-t", "mangle", "-X", "KUBE-IPTABLES-HINT")
	}
}

// removeSandboxes stops and removes every pod sandbox through the CRI.
func (c *cluster) removeSandboxes() error {
	sock := c.path("containerd/containerd.sock")
	if _, err := os.Stat(sock); err != nil {
		return nil
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to containerd: %w", err)
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing pod sandboxes: %w", err)
	}
	var errs []error
	for _, s := range resp.Items {
		if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stopping pod sandbox %s/%s: %w", s.Metadata.Namespace, s.Metadata.Name, err))
			continue
		}
		if _, err := rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, fmt.Errorf("removing pod sandbox %s/%s: %w", s.Metadata.Namespace, s.Metadata.Name, err))
		}
	}
	if len(resp.Items) > 0 {
		c.logf("removed %d pod sandboxes", len(resp.Items))
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims this containerd started (they
// outlive it by design), found by the socket address they were given, and
// the containers under them with them.
func (c *cluster) killShims() {
	addr := c.path("containerd/containerd.sock")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") || !strings.Contains(string(cmdline), addr) {
			continue
		}
		c.logf("killing leftover shim %d", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// unmountAll unmounts every mount under DIR (rootfs overlays, sandbox
// shm, projected volumes' tmpfs), deepest first.
func (c *cluster) unmountAll() error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var mounts []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == c.dir || strings.HasPrefix(mp, c.dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	var errs []error
	for _, mp := range mounts {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// removePodCgroups removes the kubelet's kubepods cgroups in every
// hierarchy, killing what is still in them.
func removePodCgroups() error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if st, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil && st.IsDir() {
		roots = append(roots, "/sys/fs/cgroup/kubepods")
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(procs)) {
					if pid, err := strconv.Atoi(f); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			var err error
			for i := 0; i < 50; i++ {
				if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// listNetns lists the named network namespaces (CRI's cni-* ones live in
// /var/run/netns).
func listNetns() map[string]bool {
	m := map[string]bool{}
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		m[e.Name()] = true
	}
	return m
}

// removeNetns removes the cni-* network namespaces made since the start
// that the CRI did not remove (after a crash).
func (c *cluster) removeNetns() {
	for n := range listNetns() {
		if c.netnsAtStart[n] || !strings.HasPrefix(n, "cni-") {
			continue
		}
		p := filepath.Join("/var/run/netns", n)
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
		if err := os.Remove(p); err == nil {
			c.logf("removed leftover network namespace %s", n)
		}
	}
}

// overlayWorks tells whether an overlay mount works in dir (it does not in
// some nested containers).
func overlayWorks(dir string) bool {
	base, err := os.MkdirTemp(dir, "overlay-check-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(base)
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			return false
		}
	}
	opts := fmt.Sprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work", base, base, base)
	if err := syscall.Mount("overlay", filepath.Join(base, "merged"), "overlay", 0, opts); err != nil {
		return false
	}
	_ = syscall.Unmount(filepath.Join(base, "merged"), 0)
	return true
}

// removeCNIChains removes the bridge plugin's masquerade chains of this
// cluster's network (their rules name "teardown-e2e") that a sandbox's CNI
// DEL left (seen once in a run of make e2e), with the POSTROUTING rules that
// jump to them.
func removeCNIChains() {
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		return
	}
	chains := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == "-A" && strings.HasPrefix(f[1], "CNI-") && strings.Contains(l, `name: \"teardown-e2e\"`) {
			chains[f[1]] = true
		}
	}
	for chain := range chains {
		// Delete the jumps by number, last first, so the numbers hold.
		rules, _ := exec.Command("iptables", "-w", "-t", "nat", "-S", "POSTROUTING").Output()
		var nums []int
		n := 0
		for _, l := range strings.Split(string(rules), "\n") {
			if !strings.HasPrefix(l, "-A POSTROUTING") {
				continue
			}
			n++
			if strings.HasSuffix(l, "-j "+chain) {
				nums = append(nums, n)
			}
		}
		for i := len(nums) - 1; i >= 0; i-- {
			_ = exec.Command("iptables", "-w", "-t", "nat", "-D", "POSTROUTING", strconv.Itoa(nums[i])).Run()
		}
		_ = exec.Command("iptables", "-w", "-t", "nat", "-F", chain).Run()
		_ = exec.Command("iptables", "-w", "-t", "nat", "-X", chain).Run()
	}
}
