#!/usr/bin/env bash
# Builds the node binaries (kubelet, kube-scheduler, kube-proxy) from the same
# pinned Go modules as hack/control-plane.sh, into the same per-version cache
# folder (bin/k8s links to it), only what is missing; and installs the node's
# Debian packages (containerd, runc, the CNI plugins) with apt-get when missing.
# The big links run under `nice -n 10`: the machine is shared.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools"
"$root/hack/control-plane.sh" >/dev/null
version=$(cd "$tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/teardown/k8s-$version"

minor=${version#v1.}; minor=${minor%%.*}
v=k8s.io/component-base/version
ldflags="-X $v.gitVersion=$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"

build() { # build NAME PACKAGE
	local name=$1 pkg=$2
	if [[ -x "$cache/$name" ]]; then return; fi
	echo "building $name ($pkg) into $cache" >&2
	(cd "$tools" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags="-s -w $ldflags" -o "$cache/$name.tmp" "$pkg")
	mv "$cache/$name.tmp" "$cache/$name"
}

build kubelet k8s.io/kubernetes/cmd/kubelet
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build kube-proxy k8s.io/kubernetes/cmd/kube-proxy

# The node's runtime: Debian's containerd (with its CRI plugin), runc, and the
# bridge, host-local and loopback CNI plugins (in /usr/lib/cni).
missing=()
command -v containerd >/dev/null || missing+=(containerd)
command -v runc >/dev/null || missing+=(runc)
[[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
command -v conntrack >/dev/null || missing+=(conntrack)
if ((${#missing[@]})); then
	echo "installing ${missing[*]} with apt-get" >&2
	sudo=; [[ $(id -u) == 0 ]] || sudo=sudo
	$sudo apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "$root/bin/k8s"
