#!/usr/bin/env bash
# Builds the real control plane (etcd, kube-apiserver, kube-controller-manager,
# kubectl) from the pinned Go modules in hack/tools, only what is missing.
# The binaries live in a per-version folder under the user's cache directory so
# a fresh clone on the same machine reuses them; bin/k8s links to that folder.
#
# usage: hack/control-plane.sh [MINOR]
#   no argument (or 1.36): the release pinned in hack/tools/go.mod, linked
#   from bin/k8s; what every test runs on.
#   1.30, 1.33, ...: the release pinned in hack/tools/k8s-MINOR/go.mod, for
#   make test-compat; linked from bin/k8s-MINOR, bin/k8s is left alone. The
#   folder's path is the last line printed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools"
link="$root/bin/k8s"
if [[ $# -gt 0 && "$1" != "1.36" ]]; then
	tools="$root/hack/tools/k8s-$1"
	link="$root/bin/k8s-$1"
	if [[ ! -f "$tools/go.mod" ]]; then
		echo "no pins for Kubernetes $1: $tools/go.mod is missing" >&2
		exit 2
	fi
fi
version=$(cd "$tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/teardown/k8s-$version"
mkdir -p "$cache" "$root/bin"

# Stamp the release into the binaries, as Kubernetes' own build does, so that
# /version and kubectl's skew check see the real version instead of v0.0.0.
minor=${version#v1.}; minor=${minor%%.*}
v=k8s.io/component-base/version
ldflags="-X $v.gitVersion=$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"

build() { # build NAME PACKAGE
	local name=$1 pkg=$2
	if [[ -x "$cache/$name" ]]; then return; fi
	echo "building $name ($pkg) into $cache" >&2
	(cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w $ldflags" -o "$cache/$name.tmp" "$pkg")
	mv "$cache/$name.tmp" "$cache/$name"
}

build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kubectl k8s.io/kubernetes/cmd/kubectl

ln -sfn "$cache" "$link"
echo "$link"
